#!/usr/bin/env python3
"""av_stimulus.py PAINTER SINK COUNT: flash and beep at the same instants, for the A/V sync test
of the real path (livepush screen with the X11 helper and the PipeWire mic).

PAINTER is x11-paint's command line prefix (run with "--geometry ... solid 000000"), SINK the test
mic's input sink. Every 1.2 s, COUNT times, the window turns white for 200 ms (x11-paint's
"pattern" command; it answers "painted" once the server has it) and a 200 ms 3 kHz burst starts
in the sound that pw-cat plays into SINK. The sound is written in 2.5 ms chunks paced by
CLOCK_MONOTONIC, a constant 300 ms ahead (a backlog of silence written first), so a sample
reaches the graph at its time plus pw-cat's own latency (one 21 ms quantum). Prints one line per flash: "flash <k> monotonic_ns=<when painted>". Standard library only.

It is the measuring instrument, not what is measured: under the load benchmark's CPU hog it
raises its own priority (nice -10, inherited by the painter and pw-cat) where it may (as root).
At the hog's priority a python stall longer than the lead starved pw-cat, which then played
every later burst that much later for good: a step in the offset that was the stimulus's own.
"""
import math
import subprocess
import sys
import threading
import time

RATE = 48000
CHUNK = 120                     # 2.5 ms
PERIOD_S, FLASH_S, FIRST_S = 1.2, 0.2, 1.0
LEAD_S = 0.300                  # write sound this far ahead of its time (within a pipe's 64 KiB)

try:
    __import__("os").nice(-10)
except PermissionError:
    pass                        # not root: the stimulus runs at everyone's priority

painter_prefix = sys.argv[1].split("\x1f")
sink, count = sys.argv[2], int(sys.argv[3])
painter = subprocess.Popen(painter_prefix + ["solid", "000000"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                           text=True, bufsize=1)
ready = painter.stdout.readline()
if not ready.startswith("ready"):
    sys.exit(f"av_stimulus: the painter said {ready!r}")
player = subprocess.Popen(["pw-cat", "--playback", "--target", sink, "--rate", str(RATE), "--channels", "1",
                           "--format", "s16", "--latency", "1024", "-"], stdin=subprocess.PIPE,
                          env=dict(__import__("os").environ, PIPEWIRE_LATENCY=f"1024/{RATE}"))

# The sound is written LEAD_S ahead of its time, so pw-cat never runs dry; the backlog that keeps
# is silence written first, so that sample n still reaches the graph at start + n / RATE (writing
# the first LEAD_S of the timeline at once instead would play all of it LEAD_S early).
time.sleep(0.5)
player.stdin.write(bytes(2 * int(LEAD_S * RATE)))
player.stdin.flush()
start = time.monotonic() + LEAD_S
total_s = FIRST_S + PERIOD_S * count + 0.5
flashes = [start + FIRST_S + PERIOD_S * k for k in range(count)]
written = 0                      # samples written so far; sample n plays at start + n / RATE


def paint_flashes():
    """The picture, on a thread of its own: a paint waits for the X server's answer, and under load
    that wait has been longer than the sound's lead; on the sound's thread it starved pw-cat, which
    then played every later burst late for good (a step of the offset that was the stimulus's)."""
    for k, flash in enumerate(flashes):
        time.sleep(max(0.0, flash - time.monotonic()))
        painter.stdin.write("pattern solid ffffff\n")
        painter.stdin.flush()
        painter.stdout.readline()
        print(f"flash {k} monotonic_ns={time.monotonic_ns()}", flush=True)
        time.sleep(max(0.0, flash + FLASH_S - time.monotonic()))
        painter.stdin.write("pattern solid 000000\n")
        painter.stdin.flush()
        painter.stdout.readline()


picture = threading.Thread(target=paint_flashes)
picture.start()
while written < total_s * RATE:
    now = time.monotonic()
    # Sound: keep LEAD_S written ahead of now.
    while start + written / RATE < now + LEAD_S:
        samples = bytearray()
        for n in range(written, written + CHUNK):
            t = start + n / RATE
            inside = any(f <= t < f + FLASH_S for f in flashes)
            value = int(0.5 * 32767 * math.sin(2 * math.pi * 3000 * (t - start))) if inside else 0
            samples += value.to_bytes(2, "little", signed=True)
        player.stdin.write(bytes(samples))
        player.stdin.flush()
        written += CHUNK
    time.sleep(0.0005)
picture.join()
player.stdin.close()
player.wait()
painter.stdin.close()
painter.wait()
