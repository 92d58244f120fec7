#!/usr/bin/env python3
"""broken_path_helper.py: a helper on the livepush_capture package that mishandles one path on
purpose, for the tests of `livepush check-helper` (every path must be caught, by name).

    broken_path_helper.py --list
    broken_path_helper.py --break CASE [GROUP]

--list prints one line per case: CASE <TAB> the check-helper lines that must fail, comma-separated.
Apart from its one fault the helper is the minimal one: a grey 160x90 picture at the pusher's rate.
"""
import os
import sys
import time

# The package from this repository (protocol/python), as an installed one would be found.
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', '..', 'protocol', 'python'))
import livepush_capture as lpc  # noqa: E402
from livepush_capture import _wire  # noqa: E402

CASES = {
    'ignores-config': ('CONFIG after START', 'keeps its first size and rate after CONFIG'),
    'blocks-without-slot': ('TIMEOUT,RELEASEs withheld,exit', 'waits for a free slot without reading or heartbeating'),
    'reuses-slot': ('RELEASEs withheld,SLOT_NOT_OWNED', 'sends a slot the pusher still holds when none is free'),
    'rejects-optional': ('optional unknown type', 'treats an unknown type with LPC_FLAG_OPTIONAL as a violation'),
    'deaf-after-welcome': ('STOP right after WELCOME', 'reads nothing for 1.2 s after WELCOME'),
    'never-gives-up': ('silent pusher', 'never declares a silent pusher hung'),
    'ignores-error': ('ERROR from the pusher', 'exits 0 after an ERROR, as if all were well'),
    'accepts-unknown': ('unknown required type', 'ignores an unknown type without LPC_FLAG_OPTIONAL'),
    'exits-1-after-stop': ('exit', 'answers STOP with FINISH but exits 1'),
}


def install_fault(case):
    """The faults that live in the package's checks are patched in before connecting."""
    if case == 'ignores-config':
        _wire.check_config = lambda payload, welcome: dict(lpc._session.Helper.current.config)
    if case == 'rejects-optional':
        parse = _wire.parse

        def strict(datagram, flags, fds):
            parsed = parse(datagram, flags, fds)
            if parsed is None:
                raise _wire.Fault(_wire.ERR['UNKNOWN_TYPE'], 'an optional message is still unknown')
            return parsed
        _wire.parse = strict
    if case == 'accepts-unknown':
        parse = _wire.parse

        def lenient(datagram, flags, fds):
            try:
                return parse(datagram, flags, fds)
            except _wire.Fault as fault:
                if fault.code == _wire.ERR['UNKNOWN_TYPE']:
                    return None
                raise
        _wire.parse = lenient


def run(case, group):
    install_fault(case)
    helper = lpc.connect(group, name='broken-' + case, max_size=(160, 90))
    lpc._session.Helper.current = helper
    if case == 'never-gives-up':
        helper.peer_timeout_ns = 10**15
    if case == 'deaf-after-welcome':
        time.sleep(1.2)
    last_index, without_slot = 0, 0
    while True:
        helper.wait_frame()
        slot = helper.acquire()
        # The slot faults wait for RELEASEs withheld: five frames in a row without a free slot
        # (a single miss happens on a loaded machine in any phase).
        without_slot = without_slot + 1 if slot is None else 0
        if slot is None and without_slot < 5:
            continue
        if slot is None and case == 'blocks-without-slot':
            while helper.acquire() is None:
                time.sleep(0.05)  # no dispatch: no RELEASE is read, no heartbeat sent
            continue
        if slot is None and case == 'reuses-slot':
            helper.acquired, helper.borrowed[last_index] = last_index, False  # pretend it is ours
            slot = lpc.Slot(last_index, helper.view[:1], lpc.frame_layout(lpc.Frame(), lpc.BGRX, 160, 90,
                                                                          helper.welcome['slot_bytes']))
        if slot is None:
            continue
        if slot.data.nbytes > 1:
            slot.data[:160 * 4 * 90] = b'\x80' * (160 * 4 * 90)
        last_index = slot.index
        helper.submit(slot)


def main(argv):
    if argv[1:] == ['--list']:
        for name, (lines, what) in CASES.items():
            print('%s\t%s\t%s' % (name, lines, what))
        return 0
    if len(argv) < 3 or argv[1] != '--break' or argv[2] not in CASES:
        print('usage: broken_path_helper.py --list | --break CASE [GROUP]', file=sys.stderr)
        return 2
    case = argv[2]
    try:
        run(case, argv[3] if len(argv) > 3 else None)
    except lpc.SessionEnded as end:
        print('broken_path_helper.py (%s): %s' % (case, end), file=sys.stderr)
        if case == 'ignores-error' and end.status == lpc.LPC_E_PUSHER_ERROR:
            return 0
        if case == 'exits-1-after-stop':
            return 1
        return end.exit_status
    return 1


sys.exit(main(sys.argv))
