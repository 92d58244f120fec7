#!/usr/bin/python3
"""A stand-in for xdg-desktop-portal's ScreenCast interface, for LivePush's tests.

It owns org.freedesktop.portal.Desktop on the session bus (the test environment's private bus,
DBUS_SESSION_BUS_ADDRESS) and answers CreateSession, SelectSources, Start and OpenPipeWireRemote
as the real portal does: each of the first three returns a Request object path at once and later
emits org.freedesktop.portal.Request.Response(u code, a{sv} results) on that path.
OpenPipeWireRemote returns a socket connected to the real PipeWire daemon of the test environment
($XDG_RUNTIME_DIR/pipewire-0, or --pipewire-socket).

Only the portal is mocked: no desktop runs here to ask the user. What a user would choose is
given on the command line:
  --node ID             the PipeWire node "chosen" (the stream of Start's results)
  --size WxH            the stream size reported in Start's results
  --start-response N    0 granted (default), 1 cancelled by the user, 2 other failure
  --token-prefix TEXT   restore tokens handed out are TEXT-1, TEXT-2, ... (one per Start)
  --log FILE            one JSON line per call: {"method": ..., "options": {...}}
  --cursor-modes N      AvailableCursorModes (bits: 1 hidden, 2 embedded, 4 metadata; default 7)
  --source-types N      AvailableSourceTypes (bits: 1 monitor, 2 window; default 3)
  --version N           the interface's version property (default 4)

SelectSources refuses a cursor mode or source type it does not list, with the real portal's
error (org.freedesktop.portal.Error.InvalidArgument "Unavailable cursor mode N").

It prints "ready" on stdout once it owns the name, and runs until SIGTERM/SIGINT.
Needs python3-dbus and python3-gi (tools/bootstrap installs them).
"""
import argparse
import json
import os
import signal
import socket
import sys

import dbus
import dbus.mainloop.glib
import dbus.service
from gi.repository import GLib

BUS_NAME = "org.freedesktop.portal.Desktop"
OBJECT_PATH = "/org/freedesktop/portal/desktop"
SCREENCAST = "org.freedesktop.portal.ScreenCast"
REQUEST = "org.freedesktop.portal.Request"
SESSION = "org.freedesktop.portal.Session"


def plain(value):
    """D-Bus values as JSON-friendly Python values."""
    if isinstance(value, (dbus.Boolean,)):
        return bool(value)
    if isinstance(value, (dbus.UInt32, dbus.Int32, dbus.UInt64, dbus.Int64, dbus.Byte)):
        return int(value)
    if isinstance(value, dbus.Dictionary):
        return {str(k): plain(v) for k, v in value.items()}
    if isinstance(value, (dbus.Array, dbus.Struct, list, tuple)):
        return [plain(v) for v in value]
    return str(value)


class Request(dbus.service.Object):
    def __init__(self, bus, path):
        super().__init__(bus, path)

    @dbus.service.signal(REQUEST, signature="ua{sv}")
    def Response(self, code, results):
        pass

    @dbus.service.method(REQUEST, in_signature="", out_signature="")
    def Close(self):
        self.remove_from_connection()


class Session(dbus.service.Object):
    def __init__(self, bus, path, portal):
        super().__init__(bus, path)
        self.portal = portal

    @dbus.service.method(SESSION, in_signature="", out_signature="")
    def Close(self):
        self.portal.log("Session.Close", {})
        self.remove_from_connection()


class Portal(dbus.service.Object):
    def __init__(self, bus, options):
        super().__init__(bus, OBJECT_PATH)
        self.bus = bus
        self.options = options
        self.starts = 0
        self.sessions = {}

    def log(self, method, options):
        if self.options.log:
            with open(self.options.log, "a") as f:
                f.write(json.dumps({"method": method, "options": plain(options)}) + "\n")

    def request(self, sender, token, code, results):
        """A Request object at the documented path; its Response follows the method's reply."""
        path = "%s/request/%s/%s" % (OBJECT_PATH, sender[1:].replace(".", "_"), token)
        request = Request(self.bus, path)

        def respond():
            request.Response(dbus.UInt32(code), dbus.Dictionary(results, signature="sv"))
            request.remove_from_connection()
            return False

        GLib.timeout_add(20, respond)
        return dbus.ObjectPath(path)

    @dbus.service.method(SCREENCAST, in_signature="a{sv}", out_signature="o", sender_keyword="sender")
    def CreateSession(self, options, sender=None):
        self.log("CreateSession", options)
        session_path = "%s/session/%s/%s" % (OBJECT_PATH, sender[1:].replace(".", "_"),
                                             options["session_handle_token"])
        self.sessions[session_path] = Session(self.bus, session_path, self)
        return self.request(sender, options["handle_token"], 0, {"session_handle": dbus.String(session_path)})

    @dbus.service.method(SCREENCAST, in_signature="oa{sv}", out_signature="o", sender_keyword="sender")
    def SelectSources(self, session, options, sender=None):
        self.log("SelectSources", options)
        if str(session) not in self.sessions:
            raise dbus.exceptions.DBusException("unknown session " + session,
                                                name="org.freedesktop.portal.Error.InvalidArgument")
        mode = int(options.get("cursor_mode", 1))
        if mode & self.options.cursor_modes == 0:
            raise dbus.exceptions.DBusException("Unavailable cursor mode %d" % mode,
                                                name="org.freedesktop.portal.Error.InvalidArgument")
        types = int(options.get("types", 1))
        if types & ~self.options.source_types:
            raise dbus.exceptions.DBusException("Unsupported source type: %x" % types,
                                                name="org.freedesktop.portal.Error.InvalidArgument")
        return self.request(sender, options["handle_token"], 0, {})

    @dbus.service.method(SCREENCAST, in_signature="osa{sv}", out_signature="o", sender_keyword="sender")
    def Start(self, session, parent_window, options, sender=None):
        self.log("Start", options)
        code = self.options.start_response
        results = {}
        if code == 0:
            self.starts += 1
            width, height = self.options.size
            stream = dbus.Struct((dbus.UInt32(self.options.node), dbus.Dictionary({
                "position": dbus.Struct((dbus.Int32(0), dbus.Int32(0)), signature=None),
                "size": dbus.Struct((dbus.Int32(width), dbus.Int32(height)), signature=None),
                "source_type": dbus.UInt32(1),
            }, signature="sv")), signature=None)
            results = {
                "streams": dbus.Array([stream], signature="(ua{sv})"),
                "restore_token": dbus.String("%s-%d" % (self.options.token_prefix, self.starts)),
                "persist_mode": dbus.UInt32(2),
            }
        return self.request(sender, options["handle_token"], code, results)

    @dbus.service.method(SCREENCAST, in_signature="oa{sv}", out_signature="h")
    def OpenPipeWireRemote(self, session, options):
        self.log("OpenPipeWireRemote", options)
        connection = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        connection.connect(self.options.pipewire_socket)
        descriptor = dbus.types.UnixFd(connection.fileno())  # dbus-python keeps its own duplicate
        connection.close()
        return descriptor

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="ss", out_signature="v")
    def Get(self, interface, name):
        return self.GetAll(interface)[name]

    @dbus.service.method(dbus.PROPERTIES_IFACE, in_signature="s", out_signature="a{sv}")
    def GetAll(self, interface):
        return {"version": dbus.UInt32(self.options.version),
                "AvailableSourceTypes": dbus.UInt32(self.options.source_types),
                "AvailableCursorModes": dbus.UInt32(self.options.cursor_modes)}


def main():
    parser = argparse.ArgumentParser(description="mock ScreenCast portal")
    parser.add_argument("--node", type=int, required=True)
    parser.add_argument("--size", default="640x480")
    parser.add_argument("--start-response", type=int, default=0)
    parser.add_argument("--token-prefix", default="token")
    parser.add_argument("--log")
    parser.add_argument("--cursor-modes", type=int, default=7)
    parser.add_argument("--source-types", type=int, default=3)
    parser.add_argument("--version", type=int, default=4)
    parser.add_argument("--pipewire-socket",
                        default=os.path.join(os.environ.get("XDG_RUNTIME_DIR", "/run/user/%d" % os.getuid()),
                                             "pipewire-0"))
    options = parser.parse_args()
    options.size = tuple(int(v) for v in options.size.split("x"))

    # The test runner may start us with signals blocked or ignored; SIGTERM/SIGINT must end us.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    signal.signal(signal.SIGINT, signal.SIG_DFL)
    dbus.mainloop.glib.DBusGMainLoop(set_as_default=True)
    bus = dbus.SessionBus()
    name = dbus.service.BusName(BUS_NAME, bus, do_not_queue=True)
    portal = Portal(bus, options)
    loop = GLib.MainLoop()
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGTERM, loop.quit)
    GLib.unix_signal_add(GLib.PRIORITY_DEFAULT, signal.SIGINT, loop.quit)
    print("ready", flush=True)
    loop.run()
    del name, portal
    return 0


if __name__ == "__main__":
    sys.exit(main())
