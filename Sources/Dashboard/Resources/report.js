// Draws the session report's charts from the statistics embedded in the page (no network).
'use strict';
(function () {
  const data = JSON.parse(document.getElementById('report-data').textContent);
    const marks = data.marks;  // seconds of each warning, error and control command
  const markPlugin = {
    id: 'marks',
    afterDatasetsDraw(chart) {
      const x = chart.scales.x, area = chart.chartArea, context = chart.ctx;
      context.save();
      for (const mark of marks) {
        const position = x.getPixelForValue(mark.s);
        if (position < area.left || position > area.right) continue;
        context.strokeStyle = mark.kind === 'error' ? 'rgba(176,0,32,0.6)'
          : mark.kind === 'control' ? 'rgba(31,119,180,0.6)' : 'rgba(161,92,0,0.5)';
        context.setLineDash(mark.kind === 'control' ? [4, 3] : []);
        context.beginPath(); context.moveTo(position, area.top); context.lineTo(position, area.bottom); context.stroke();
      }
      context.restore();
    },
  };
  function chart(id, title, unit, series) {
    return new Chart(canvasFor(id), {
      type: 'line',
      data: { datasets: series.map((item, index) => ({
        label: item.label, data: item.points.map(([s, value]) => ({ x: s, y: value })),
        borderColor: colours[index % colours.length], borderWidth: 1.5, pointRadius: 0 })) },
      options: {
        animation: false, responsive: true, maintainAspectRatio: false, parsing: false,
        plugins: { title: { display: true, text: title }, legend: { labels: { boxWidth: 12, font: { size: 10 } } } },
        scales: { x: { type: 'linear', title: { display: true, text: 's' } },
                  y: { beginAtZero: true, title: { display: true, text: unit } } },
      },
      plugins: [markPlugin],
    });
  }
  const s = data.series;
  chart('chart-bitrate', 'Bitrate (errors red, warnings orange, commands blue dashed)', 'kbps', [
    { label: 'encoder target', points: s.encoderBitrateKbps }, { label: 'encoded video', points: s.videoBitrateKbps },
    { label: 'sent (all)', points: s.sendBitrateKbps },
  ].concat(data.destinations.map((d) => ({ label: d.label, points: d.sendBitrateKbps }))));
  chart('chart-fps', 'Frames per second', 'fps', [{ label: 'encoded', points: s.fps }]);
  chart('chart-queue', 'Send queue', 'ms', [{ label: 'longest', points: s.queueMs }]
    .concat(data.destinations.map((d) => ({ label: d.label, points: d.queueMs }))));
  chart('chart-dropped', 'Frames dropped', 'per second', [{ label: 'dropped for congestion', points: s.framesDropped }]);
  chart('chart-cpu', 'CPU', '%', [{ label: 'LivePush (of all cores)', points: s.appCpu },
                                  { label: 'system (of all cores)', points: s.systemCpu }]);
  chart('chart-audio', 'Audio level (as sent)', '0-100', [{ label: 'mic', points: s.micLevel },
                                                          { label: 'desktop', points: s.desktopLevel }]);
  window.livepushReport = { ready: true };
})();
