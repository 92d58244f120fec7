#!/usr/bin/env python3
"""library_checks.py: the livepush_capture package's side of Tests/Fixtures/library-checks.c.

A helper that streams grey frames at the pusher's rate and, on the way, tries what the package
must refuse or get right (issue 29), appending one line per check to --report FILE:
frame-pts-backwards, audio-pts-backwards (Error LPC_E_INVALID naming the field, nothing sent),
layout-unchanged (frame_layout raises saying why and leaves the frame as it was),
group-from-args, and "size WxH" for each size sent (LPC_CAP_SCALE with a 640x360 source: the
aspect kept whatever the maximum's shape).

    library_checks.py --group NAME --report FILE
"""
import sys

import livepush_capture as lpc


def main():
    path = sys.argv[sys.argv.index('--report') + 1]
    report = open(path, 'a')  # check-helper starts it again for its paths
    failures = 0

    def check(name, ok, detail):
        nonlocal failures
        report.write('%s %s: %s\n' % ('ok' if ok else 'FAIL', name, detail))
        report.flush()
        failures += 0 if ok else 1

    groups = (lpc.group_from_args(['h', '--size', '1x1', '--group', 'g-one']), lpc.group_from_args(['h', '--group=g.two']),
              lpc.group_from_args(['h', '--group']))
    check('group-from-args', groups == ('g-one', 'g.two', None), repr(groups))
    try:
        helper = lpc.connect(lpc.group_from_args(), name='library-checks-py', max_size=(640, 360),
                             capabilities=lpc.CAP_SCALE | lpc.CAP_AUDIO, audio_formats=(lpc.S16LE,))
    except lpc.Error as error:
        sys.exit('library_checks.py: %s' % error)
    checked, last = False, None
    try:
        while True:
            helper.wait_frame()
            slot = helper.acquire()
            if slot is None:
                continue
            if not checked:
                helper.submit(slot)
                slot = helper.acquire()
                before = vars(slot.frame).copy()
                try:
                    lpc.frame_layout(slot.frame, 99, 64, 64, len(slot.data))
                    check('layout-unchanged', False, 'format 99 was laid out')
                except lpc.Error as error:
                    check('layout-unchanged', vars(slot.frame) == before and 'format 99' in str(error), str(error))
                slot.frame.pts_ns = lpc.now_ns() - 10**9
                try:
                    helper.submit(slot)
                    check('frame-pts-backwards', False, 'sent')
                except lpc.Error as error:
                    check('frame-pts-backwards', error.status == lpc.LPC_E_INVALID and 'FRAME.pts_ns' in str(error),
                          str(error))
                slot.frame.pts_ns = 0
                helper.submit(slot)
                now = lpc.now_ns()
                helper.send_audio(lpc.S16LE, 48000, 2, bytes(3840), now)
                try:
                    helper.send_audio(lpc.S16LE, 48000, 2, bytes(3840), now - 20 * 10**6)
                    check('audio-pts-backwards', False, 'sent')
                except lpc.Error as error:
                    check('audio-pts-backwards', error.status == lpc.LPC_E_INVALID and 'AUDIO.pts_ns' in str(error),
                          str(error))
                checked = True
                continue
            f = slot.frame
            helper.submit(slot)
            if (f.width, f.height) != last:
                report.write('size %dx%d\n' % (f.width, f.height))
                last = (f.width, f.height)
    except lpc.SessionEnded as end:
        report.write('checks failed: %d\n' % failures)
        report.close()
        sys.exit(1 if failures else end.exit_status)


main()
