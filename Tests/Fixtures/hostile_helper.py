#!/usr/bin/env python3
"""hostile_helper.py: a Capture Link helper that breaks one rule on purpose.

For the pusher's hostile-input tests and the conformance checker's self-test. Python 3,
standard library only.

    hostile_helper.py --list
    hostile_helper.py --group NAME --case CASE [--socket PATH] [--timeout SECONDS]

--list prints one line per case: CASE <TAB> EXPECTED_ERROR_NAME <TAB> description, where the
name is an lpc_error_code without the LPC_ERR_ prefix (BAD_SLOT, ...), or NONE for a case
whose correct answer is no ERROR at all. The expected answer is an ERROR message unless the
description ends with "[answer: REJECT]" or "[answer: ERROR or REJECT]".

A case connects, sends a valid HELLO (and waits for WELCOME, and sends START, where the case
needs it), then breaks exactly one rule. It then waits up to --timeout seconds (default 5)
for the pusher's answer and prints one line on stdout:

    received ERROR code=<n> name=<NAME> text=<text>
    received REJECT code=<n> name=<NAME> text=<text>
    connection closed without ERROR
    nothing received within <s> s

Exit status: 0 when the pusher answered with the expected code and the expected message
(REJECT for the refusals of a well-formed HELLO and for PEER_UID, ERROR for everything else,
protocol/SPEC.md §5.10 and §13.1), 1 otherwise, 2 for a bad command line or a case that
cannot run here (other-uid when not root). Setup failures (no WELCOME, say) print the line
for what was received and exit 1.

Expected codes follow protocol/SPEC.md, in particular:
  audio-without-capability: FORMAT (§5.4, appendix decision 4);
  audio-length: AUDIO, not BAD_LENGTH (§4.6): the header's payload_bytes is honest, only
    frame_count disagrees with the PCM that follows;
  hello-wrong-size, hello-reserved, hello-bad-name: ERROR, not REJECT (§5.10: a malformed
    HELLO gets ERROR);
  too-many-descriptors: TRUNCATED, because a receiver's control space holds 4 descriptors
    (§4.3); a pusher with a larger control buffer would answer DESCRIPTORS instead;
  slot-not-owned relies on "latest frame wins" (§7.4): the pusher keeps the newest frame, so
    slot 0 is still borrowed when the second FRAME names it.
The cases of issue 29 that end on their own finish with FINISH {SOURCE_LOST}, an unplanned end,
so that a supervising pusher (livepush screen) starts the next helper instead of ending its run.
Cases marked [pusher only] do not fit check-helper (they open 300 connections, kill themselves,
or, never reading, are timed out only after the socket has filled, later than check-helper's first
5 s): the pusher's own tests run them (HostileHelperTests, MisbehavingHelperTests).
The NONE cases expect no ERROR at all (those of issue 29 then print "ended without ERROR as
expected"; what the pusher made of them is for the test to read in its output):
  unknown-optional-type sends an unknown type 0x0031 with LPC_FLAG_OPTIONAL while capturing,
    then a HEARTBEAT, waits 1.5 s, sends FINISH {USER} and shuts its side; it prints
    "ignored as expected" if no ERROR came (the pusher closing, or staying quiet).
  helper-sends-error sends ERROR {STATE} after START (a 1.0 helper should send FINISH
    {ERROR} instead, but a pusher tolerates ERROR after HELLO and ends the session as for
    that FINISH, §5.14); it prints "ended without ERROR as expected".
other-uid must run as root: it computes the socket path as root (the pusher's uid), then
drops to the uid and gid of 'nobody' before connecting. The test harness must make the
directory and socket reachable for that uid (e.g. chmod o+x the directory, o+rw the socket)
or pass --socket.

The wire is in hostile_link.py and the cases in hostile_cases.py, beside this file.
"""
import argparse
import array
import os
import select
import signal
import socket
import struct
import sys
import time


sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from hostile_cases import *  # noqa: E402,F401,F403  (CASES, Link, Settings, the constants)


# ---------------------------------------------------------------- running one case

def drop_to_nobody():
    import pwd
    if os.geteuid() != 0:
        print("hostile_helper: case other-uid must run as root (it drops to the uid of 'nobody'); "
              "run the test as root or skip it", file=sys.stderr)
        sys.exit(2)
    pw = pwd.getpwnam('nobody')
    os.setgroups([])
    os.setgid(pw.pw_gid)
    os.setuid(pw.pw_uid)


def run_case(c, path, timeout):
    if c['name'] == 'other-uid':
        drop_to_nobody()
    l = Link(path)
    try:
        l.connect()
        if c['setup'] in ('hello', 'start'):
            l.hello(**c['hello'])
            l.welcome()
            if c['setup'] == 'start':
                l.start()
        c['action'](l)
        if c['name'] == 'unknown-optional-type':
            return optional_verdict(l, timeout)
        if c['expected'] == 'NONE':
            return no_error_verdict(l, timeout)
    except SetupFailed as e:
        line = str(e)
        print(line if line.startswith('received') or line.startswith('connection') else f'setup failed: {line}')
        return 1
    deadline = time.monotonic() + timeout
    while True:
        m = l.next_message(deadline)
        if m is None:
            print(f'nothing received within {timeout:g} s')
            return 1
        if m[0] == 'CLOSED':
            print('connection closed without ERROR')
            return 1
        if m[0] == 'GARBAGE':
            print(f'received a {len(m[1])}-byte datagram, shorter than a header')
            return 1
        type_, payload, fds = m
        for fd in fds:
            os.close(fd)
        if type_ in (ERROR, REJECT):
            print(verdict_line(type_, payload))
            kind = 'ERROR' if type_ == ERROR else 'REJECT'
            code = struct.unpack_from('<I', payload)[0] if len(payload) >= 4 else None
            return 0 if code == ERR[c['expected']] and kind in c['kinds'] else 1
        # RELEASE, HEARTBEAT, CONFIG, STOP...: keep waiting for the verdict


def watch(l, seconds):
    """None (quiet), ('CLOSED',), or (type, payload) of the first ERROR or REJECT."""
    deadline = time.monotonic() + seconds
    while True:
        m = l.next_message(deadline)
        if m is None or m[0] == 'CLOSED':
            return m
        if m[0] == 'GARBAGE':
            continue
        type_, payload, fds = m
        for fd in fds:
            os.close(fd)
        if type_ in (ERROR, REJECT):
            return (type_, payload)


def no_error_verdict(l, timeout):
    """helper-sends-error: the pusher must end the session without answering ERROR."""
    try:
        l.sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    m = watch(l, timeout)
    if m is not None and m[0] != 'CLOSED':
        print(verdict_line(*m))
        return 1
    print('ended without ERROR as expected')
    return 0


def optional_verdict(l, timeout):
    """unknown-optional-type: no ERROR may come, neither for the optional message nor later."""
    m = watch(l, 1.5)
    if m is not None and m[0] == 'CLOSED':
        print('connection closed without ERROR before FINISH: the optional message was not ignored')
        return 1
    if m is not None:
        print(verdict_line(*m))
        return 1
    reason = 'done'.encode()
    l.send(FINISH, struct.pack('<II', 1, len(reason)) + reason)
    try:
        l.sock.shutdown(socket.SHUT_WR)
    except OSError:
        pass
    m = watch(l, timeout)
    if m is not None and m[0] != 'CLOSED':
        print(verdict_line(*m))
        return 1
    print('ignored as expected')
    return 0


def main():
    ap = argparse.ArgumentParser(description='A Capture Link helper that breaks one rule on purpose.')
    ap.add_argument('--list', action='store_true', help='print CASE<TAB>EXPECTED_ERROR_NAME<TAB>description lines')
    ap.add_argument('--group', help='the capture group the pusher serves')
    ap.add_argument('--case', help='the case to run (see --list)')
    ap.add_argument('--socket', help='connect to this path instead of the group\'s rendezvous path')
    ap.add_argument('--timeout', type=float, default=5.0, help='seconds to wait for the answer (default 5)')
    a = ap.parse_args()
    Settings.timeout_s = a.timeout
    if a.list:
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `--list | head` is fine
        for c in CASES:
            answer = '' if c['kinds'] == ('ERROR',) else f" [answer: {' or '.join(c['kinds'])}]"
            print(f"{c['name']}\t{c['expected']}\t{c['description']}{answer}")
        return 0
    if not a.case or not (a.group or a.socket):
        ap.error('--case and --group (or --socket) are required unless --list is given')
    c = next((c for c in CASES if c['name'] == a.case), None)
    if c is None:
        ap.error(f"unknown case '{a.case}'; --list prints them")
    if a.socket:
        path = a.socket
    else:
        xdg = os.environ.get('XDG_RUNTIME_DIR', '')  # empty or relative counts as unset
        path = f'{xdg}/livepush/{a.group}.sock' if xdg.startswith('/') else f'/tmp/livepush-{os.getuid()}/{a.group}.sock'
    return run_case(c, path, a.timeout)


if __name__ == '__main__':
    sys.exit(main())
