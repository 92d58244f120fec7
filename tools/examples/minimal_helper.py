#!/usr/bin/env python3
"""minimal_helper.py: a whole LivePush capture helper on the livepush_capture package: colour bars
at the pusher's frame rate (30 fps by default) until the pusher says STOP or SIGINT/SIGTERM.
    pip install ./protocol/python && python3 minimal_helper.py [--group GROUP]"""
import signal
import sys

import livepush_capture as lpc

BARS = [b'\xff\xff\xff\xff', b'\x00\xff\xff\xff', b'\xff\xff\x00\xff', b'\x00\xff\x00\xff',  # BGRx: white,
        b'\xff\x00\xff\xff', b'\x00\x00\xff\xff', b'\xff\x00\x00\xff', b'\x00\x00\x00\xff']  # yellow, cyan...


def main():
    signal.signal(signal.SIGTERM, signal.default_int_handler)  # SIGTERM as Ctrl-C: KeyboardInterrupt
    try:
        helper = lpc.connect(lpc.group_from_args(), name='minimal-helper-py',  # --group NAME (SPEC §3.6)
                             max_size=(640, 360), start_info='{"source":"test-pattern"}')
    except lpc.Error as error:  # lpc.ConnectError: no pusher listens on the group
        sys.exit('minimal_helper.py: %s' % error)
    try:
        while True:
            helper.wait_frame()  # paces at CONFIG's fps; answers STOP, RELEASE, heartbeats
            slot = helper.acquire()  # None: no free slot, the frame is dropped and counted
            if slot is None:
                continue
            f = slot.frame
            row = b''.join(BARS[x * 8 // f.width] for x in range(f.width))
            for y in range(f.height):
                start = f.plane_offset[0] + y * f.stride[0]
                slot.data[start:start + len(row)] = row
            helper.submit(slot)
    except lpc.SessionEnded as end:
        print('minimal_helper.py: %s' % end, file=sys.stderr)
        sys.exit(end.exit_status)
    except KeyboardInterrupt:
        sys.exit(helper.finish(lpc.FINISH_USER, 'stopped by a signal'))


main()
