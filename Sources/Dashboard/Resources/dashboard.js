// The LivePush dashboard: charts from the statistics events (history first, then Server-Sent
// Events), the outgoing picture refreshed twice a second, buttons that send control commands.
// The token comes from this page's own URL (the one livepush printed) and is sent in the
// X-LivePush-Token header, never kept in a cookie: cookies reach every port of the host (issue 30).
// The picture and the event stream cannot send a header: they give it in their query.
'use strict';

const token = new URLSearchParams(location.search).get('token') || '';
const withToken = { headers: { 'X-LivePush-Token': token } };

const keptPoints = 300;
const dashboard = { points: 0, previewLoads: 0, lastAnswer: null, lastStatus: null, charts: {} };
window.livepushDashboard = dashboard;
let lastSeq = 0;
let firstNs = null;

function makeChart(id, title, unit, series) {
  const chart = new Chart(canvasFor(id), {
    type: 'line',
    data: { labels: [], datasets: series.map((name, index) => dataset(name, index)) },
    options: {
      animation: false, responsive: true, maintainAspectRatio: false, spanGaps: true,
      plugins: { title: { display: true, text: title }, legend: { labels: { boxWidth: 12, font: { size: 10 } } } },
      scales: { x: { title: { display: true, text: 's' } }, y: { beginAtZero: true, title: { display: true, text: unit } } },
      elements: { point: { radius: 0 } },
    },
  });
  dashboard.charts[id] = chart;
  return chart;
}

function dataset(label, index) {
  return { label, data: [], borderColor: colours[index % colours.length], borderWidth: 1.5 };
}

const charts = {
  bitrate: makeChart('chart-bitrate', 'Bitrate', 'kbps', ['encoder target', 'encoded video', 'sent (all)']),
  fps: makeChart('chart-fps', 'Frames per second', 'fps', ['encoded']),
  queue: makeChart('chart-queue', 'Send queue', 'ms', ['longest']),
  dropped: makeChart('chart-dropped', 'Frames dropped', 'per second', ['dropped for congestion']),
  cpu: makeChart('chart-cpu', 'CPU', '% of all cores', ['LivePush', 'system']),
  audio: makeChart('chart-audio', 'Audio level (as sent)', '0-100', ['mic', 'desktop']),
};

// What tells a destination from another on the same server: its label, or its key's fingerprint.
function destinationName(destination) {
  return destination.label || (destination.keyFingerprint ? 'key ' + destination.keyFingerprint : '');
}

// A series per destination, made when it first appears (by its index, redacted URL and name).
function destinationSeries(chart, first, destination) {
  const label = '#' + destination.index + ' ' + destination.url + ' (' + destinationName(destination) + ')';
  let found = chart.data.datasets.findIndex((set) => set.label === label);
  if (found < 0) {
    const set = dataset(label, chart.data.datasets.length);
    set.data = chart.data.labels.map(() => null);
    chart.data.datasets.push(set);
    found = chart.data.datasets.length - 1;
  }
  return chart.data.datasets[found];
}

function addPoint(chart, x, values) {
  chart.data.labels.push(x);
  chart.data.datasets.forEach((set, index) => set.data.push(index < values.length ? values[index] : null));
  if (chart.data.labels.length > keptPoints) {
    chart.data.labels.shift();
    chart.data.datasets.forEach((set) => set.data.shift());
  }
}

function addStatistics(event) {
  if (firstNs === null) firstNs = event.monotonicNs;
  const x = Math.round((event.monotonicNs - firstNs) / 1e9);
  addPoint(charts.bitrate, x, [event.encoderBitrateKbps, event.videoBitrateKbps, event.sendBitrateKbps]);
  addPoint(charts.fps, x, [event.fps]);
  addPoint(charts.queue, x, [event.queueMs]);
  addPoint(charts.dropped, x, [event.framesDropped]);
  addPoint(charts.cpu, x, [event.appCpu, event.systemCpu]);
  addPoint(charts.audio, x, [event.micLevel, event.desktopLevel]);
  for (const destination of event.destinations) {
    destinationSeries(charts.bitrate, 3, destination).data[charts.bitrate.data.labels.length - 1] = destination.sendBitrateKbps;
    destinationSeries(charts.queue, 1, destination).data[charts.queue.data.labels.length - 1] = destination.queueMs;
  }
  dashboard.points += 1;
}

function describe(event) {
  switch (event.type) {
    case 'error': case 'warning': return event.type + ' ' + event.code + ': ' + event.message;
    case 'pushStatus': return event.status + ': ' + event.message;
    case 'control': return 'command: ' + event.command + ' ' + event.args.join(' ');
    case 'session': return 'session ' + event.event + (event.name ? ' (' + event.name + ')' : '');
    case 'recordBegin': case 'recordComplete': return event.type + ' ' + event.code + ' ' + event.path;
    case 'recordSplit': return 'recordSplit ' + event.previousPath + ' complete; now ' + event.path;
    case 'replaySaved': return 'replay saved ' + event.code + ' ' + event.path + ' (' + (event.durationMs / 1000).toFixed(1) + ' s)';
    default: return event.type;
  }
}

function addEvent(event) {
  if (event.type === 'volume' || event.type === 'recordProgress') return;
  const list = document.getElementById('events');
  const item = document.createElement('li');
  item.className = event.type;
  item.textContent = event.time.substring(11, 19) + ' ' + describe(event);
  list.prepend(item);
  while (list.children.length > 40) list.lastChild.remove();
}

function handle(event) {
  if (event.seq <= lastSeq) return;  // history and the stream overlap
  lastSeq = event.seq;
  if (event.type === 'statistics') addStatistics(event); else addEvent(event);
}

function redraw() {
  Object.values(charts).forEach((chart) => chart.update('none'));
}

async function refreshStatus() {
  try {
    const status = await (await fetch('api/status', withToken)).json();
    dashboard.lastStatus = status;
    document.getElementById('name').textContent = status.name || '';
    const state = document.getElementById('state');
    const words = [status.state];  // idle, capturing, connecting, pushing, reconnecting or failed
    if (status.paused) words.push('paused');
    if (status.placeholder && status.placeholder !== 'paused') words.push(status.placeholder);
    if (status.recordingPath) words.push(status.recordingPaused ? 'recording paused' : 'recording');
    document.getElementById('recording-controls').hidden = !status.recordingPath;
    document.getElementById('replay-save').hidden = !status.replayBufferSeconds;
    if (status.muted) words.push('muted'); else if (status.mutedSources.length) words.push('muted: ' + status.mutedSources.join(', '));
    words.push(status.currentVideoBitrateKbps + ' kbps (target ' + status.targetVideoBitrateKbps + ')');
    state.textContent = words.join(' · ');
    state.className = 'state' + (status.paused ? ' paused' : '');
    const body = document.querySelector('#destinations tbody');
    body.replaceChildren(...status.destinations.map((d) => {
      const row = document.createElement('tr');
      [d.index, d.url + ' (' + destinationName(d) + ')', d.status, d.sendBitrateKbps, d.queueMs, d.framesDropped].forEach((value, column) => {
        const cell = document.createElement('td');
        if (column === 1) {
          // The URL may break after a slash or a colon (<wbr>), so that the table fits a narrow screen.
          String(value).split(/(?<=[/:])/).forEach((part, index) => {
            if (index > 0) cell.append(document.createElement('wbr'));
            cell.append(part);
          });
        } else {
          cell.textContent = value;
        }
        row.append(cell);
      });
      return row;
    }));
    const input = document.getElementById('bitrate-value');
    if (!input.value) input.value = status.targetVideoBitrateKbps;
    showSettings(status);
  } catch (error) {
    document.getElementById('state').textContent = 'the broadcast does not answer (' + error + ')';
  }
}

// The settings' controls show what the broadcast has (status.settings), except the one being
// edited: a control that has focus keeps what the user is typing or choosing.
function showSettings(status) {
  const settings = status.settings;
  const set = (id, value) => {
    const element = document.getElementById(id);
    if (document.activeElement === element) return;
    if (element.type === 'checkbox') element.checked = value; else element.value = value;
  };
  set('push-mirror', settings.pushMirror);
  set('preview-open', settings.previewOpen);
  set('preview-mirror', settings.previewMirror);
  set('bgm-loop', settings.bgmLoop);
  set('denoise', settings.denoise);
  set('agc', settings.agc);
  set('voice-activity', settings.voiceActivity);
  set('ear-monitor', settings.earMonitor);
  set('mic-volume', status.volumePercent.mic ?? 100);
  set('desktop-volume', status.volumePercent.desktop ?? 100);
  set('bgm-volume', status.volumePercent.music ?? 100);
  set('log-level', status.logLevel);
}

// Each setting sends the ctl command of the same name when it changes.
function wireSettings() {
  const onOff = (checkbox) => (checkbox.checked ? 'on' : 'off');
  const bind = (id, commandFor) => {
    const element = document.getElementById(id);
    element.onchange = () => { const [command, args] = commandFor(element); send(command, args); element.blur(); };
  };
  document.getElementById('restart').onclick = () => send('restart');
  bind('push-mirror', (e) => ['mirror', ['push', onOff(e)]]);
  bind('preview-open', (e) => ['preview', [e.checked ? 'open' : 'close']]);
  bind('preview-mirror', (e) => ['mirror', ['preview', onOff(e)]]);
  bind('bgm-loop', (e) => ['bgm', ['loop', onOff(e)]]);
  bind('denoise', (e) => ['denoise', [e.value]]);
  bind('agc', (e) => ['agc', [onOff(e)]]);
  bind('voice-activity', (e) => ['voice-activity', [onOff(e)]]);
  bind('ear-monitor', (e) => ['ear-monitor', [onOff(e)]]);
  bind('mic-volume', (e) => ['volume', ['mic', e.value]]);
  bind('desktop-volume', (e) => ['volume', ['desktop', e.value]]);
  bind('bgm-volume', (e) => ['bgm', ['volume', e.value]]);
  bind('log-level', (e) => ['log-level', [e.value]]);
}

async function send(command, args) {
  const query = 'command=' + encodeURIComponent(command) + (args ? '&args=' + encodeURIComponent(args.join(',')) : '');
  const response = await fetch('api/control?' + query, { method: 'POST', ...withToken });
  const answer = await response.json();
  dashboard.lastAnswer = answer;
  const box = document.getElementById('answer');
  box.textContent = answer.ok ? command + ': done' : answer.error.message;
  box.className = 'answer' + (answer.ok ? '' : ' error');
  refreshStatus();
}

function refreshPreview() {
  const image = document.getElementById('preview');
  const next = () => setTimeout(refreshPreview, 500);
  image.onload = () => { dashboard.previewLoads += 1; next(); };
  image.onerror = next;
  image.src = 'preview.jpg?token=' + encodeURIComponent(token) + '&n=' + Date.now();
}

async function start() {
  document.getElementById('pause').onclick = () => send('pause');
  document.getElementById('resume').onclick = () => send('resume');
  document.getElementById('mute-mic').onclick = () => send('mute', ['mic']);
  document.getElementById('mute-all').onclick = () => send('mute', ['all']);
  document.getElementById('unmute').onclick = () => send('unmute', ['all']);
  document.getElementById('reconnect').onclick = () => send('reconnect');
  document.getElementById('record-pause').onclick = () => send('record', ['pause']);
  document.getElementById('record-resume').onclick = () => send('record', ['resume']);
  document.getElementById('record-split').onclick = () => send('record', ['split']);
  document.getElementById('record-stop').onclick = () => send('record', ['stop']);
  // No file name: the run names it (the page may not choose where a file goes).
  document.getElementById('replay-save').onclick = () => send('replay', ['save']);
  wireSettings();
  document.getElementById('bitrate').onclick = () => send('bitrate', [document.getElementById('bitrate-value').value]);
  const history = await (await fetch('api/history', withToken)).json();
  history.forEach(handle);
  redraw();
  const source = new EventSource('events?token=' + encodeURIComponent(token));
  source.onmessage = (message) => handle(JSON.parse(message.data));
  setInterval(redraw, 1000);
  setInterval(refreshStatus, 1000);
  refreshStatus();
  refreshPreview();
}

start();
