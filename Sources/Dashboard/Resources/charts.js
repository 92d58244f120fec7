// Shared by the dashboard and the session report: chart boxes and series colours.
'use strict';

const colours = ['#1f77b4', '#d62728', '#2ca02c', '#9467bd', '#ff7f0e', '#8c564b', '#17becf'];

// Each chart's canvas, in its own box in #charts, made when the chart is.
function canvasFor(id) {
  const box = document.createElement('div');
  box.className = 'chart';
  const canvas = document.createElement('canvas');
  canvas.id = id;
  box.append(canvas);
  document.getElementById('charts').append(box);
  return canvas;
}
