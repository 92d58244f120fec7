#!/usr/bin/python3
"""The known, moving picture tools/testenv --wayland shows on the compositor's output.

A fullscreen GTK 4 window (a real Wayland client, shared-memory buffers drawn with cairo):
  top half     eight colour bars, left to right white, yellow, cyan, green, magenta, red, blue,
               black, each 1/8 of the width (the same bars as the X11 tests' colour-bars helper)
  bottom half  black, with a 64x64 white square whose left edge is at x = (t * 200 px/s) mod
               (width - 64), t in seconds of CLOCK_MONOTONIC, centred at 3/4 of the height
It redraws at the compositor's frame rate and prints "ready WxH" once its first frame is drawn.
Environment: WAYLAND_DISPLAY (the compositor), XDG_RUNTIME_DIR.
"""
import sys

import gi

gi.require_version("Gtk", "4.0")
from gi.repository import GLib, Gtk  # noqa: E402

BARS = [(1, 1, 1), (1, 1, 0), (0, 1, 1), (0, 1, 0), (1, 0, 1), (1, 0, 0), (0, 0, 1), (0, 0, 0)]
SQUARE = 64
SPEED_PX_PER_S = 200
announced = False


def draw(area, cr, width, height, _data):
    global announced
    bar = width / len(BARS)
    for index, (r, g, b) in enumerate(BARS):
        cr.set_source_rgb(r, g, b)
        cr.rectangle(round(index * bar), 0, round((index + 1) * bar) - round(index * bar), height // 2)
        cr.fill()
    cr.set_source_rgb(0, 0, 0)
    cr.rectangle(0, height // 2, width, height - height // 2)
    cr.fill()
    x = int(GLib.get_monotonic_time() / 1e6 * SPEED_PX_PER_S) % max(1, width - SQUARE)
    cr.set_source_rgb(1, 1, 1)
    cr.rectangle(x, height * 3 // 4 - SQUARE // 2, SQUARE, SQUARE)
    cr.fill()
    if not announced and width > 0:
        announced = True
        print("ready %dx%d" % (width, height), flush=True)


def activate(app):
    window = Gtk.ApplicationWindow(application=app, title="livepush-test-scene")
    area = Gtk.DrawingArea()
    area.set_draw_func(draw, None)
    area.add_tick_callback(lambda widget, _clock: widget.queue_draw() or True)
    window.set_child(area)
    window.fullscreen()
    window.present()


def main():
    app = Gtk.Application(application_id="org.livepush.TestScene")
    app.connect("activate", activate)
    return app.run([sys.argv[0]])


if __name__ == "__main__":
    sys.exit(main())
