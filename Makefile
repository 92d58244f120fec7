# LivePush: the two commands of the README, and the benchmarks.
#   make run    install what is missing, build in release mode, record the screen (tools/demo)
#   make test   install what is missing, start the private test environment, run every test
#   make bench  run every benchmark (prints figures; asserts nothing about speed)
#   make deb    the Debian package, .build/deb/livepush_VERSION_ARCH.deb (tools/package/build-deb)
#   make package-test  install that package on a fresh Debian 12 and record there (tools/package/test-deb)
SHELL := /bin/bash
SWIFT ?= swift
RELEASE_BIN = .build/release

.PHONY: all bootstrap build run test bench soak fuzz clean install install-files uninstall deb package-test

all: build

bootstrap:
	@tools/bootstrap

# --static-swift-stdlib: the Swift runtime and Foundation linked in, as the Debian package ships them
# (Package.swift's releaseLinking says how the release executables are linked, and why).
build: bootstrap
	$(SWIFT) build -c release --static-swift-stdlib

# The main job: record the screen with `livepush screen` (tools/demo). Without a desktop (no
# DISPLAY) it records 10 s of a private Xvfb with moving content.
run: build
	@tools/demo

# Build first, so that a compile error is reported without the environment's noise; the release
# build too, whose link ReleaseLinkTests check. tools/testenv stops the environment however the
# tests end. Two phases in one environment: every test but the load test, then the load test alone
# (5 minutes of 1080p30 under a CPU hog of its own, issue 29), so that its hog loads no other test
# and no other test's load is counted against it.
LOAD_TESTS = LivePushTests\.LoadTests
test: build
	$(SWIFT) build --build-tests
	rm -f .build/test-results*.xml
	status=0; \
	tools/testenv run --wayland -- bash -c '$(SWIFT) test --skip "$(LOAD_TESTS)" --xunit-output .build/test-results.xml; \
	    phase=$$?; $(SWIFT) test --skip-build --filter "$(LOAD_TESTS)" --xunit-output .build/test-results-load.xml \
	    || phase=1; exit $$phase' || status=1; \
	tools/fuzz/run $(FUZZ_SECONDS) || status=1; \
	tools/test-summary .build/test-results*.xml || status=1; \
	exit $$status

# The Capture Link decoder under libFuzzer + AddressSanitizer; `make test` runs it briefly.
# A long run: make fuzz FUZZ_SECONDS=3600
FUZZ_SECONDS ?= 20
fuzz:
	tools/fuzz/run $(FUZZ_SECONDS)

# Each benchmark prints one line per case (the median of its runs); the line formats are a
# contract that tools read (docs/benchmarks.md).
bench: build
	# the installed package (issue 36): what `make deb` installs, laid out from these release executables.
	tools/package/stage .build/bench-package $(RELEASE_BIN)
	$(RELEASE_BIN)/livepush-bench link --runs 3
	$(RELEASE_BIN)/livepush-bench capture --runs 3
	cc -std=c11 -O2 tools/testclients/x11-paint.c -o .build/x11-paint -lxcb
	$(RELEASE_BIN)/livepush-bench record --runs 3 --painter .build/x11-paint
	# replay buffer (issue 34): the pusher's RSS with a 30 s buffer minus without.
	$(RELEASE_BIN)/livepush-bench replay --runs 3 --painter .build/x11-paint
	# 4K recording against ffmpeg on a private 3840x2160 Xvfb (issue 22; about 2.5 min).
	$(RELEASE_BIN)/livepush-bench record-size --runs 3 --painter .build/x11-paint
	tools/testenv run --no-x11 --no-nginx -- $(RELEASE_BIN)/livepush-bench audio --runs 3
	# a track per source (issue 34): the mix alone against the mix and three source tracks, at 640x360.
	tools/testenv run --no-nginx -- $(RELEASE_BIN)/livepush-bench record-tracks --runs 3
	# PipeWire screen capture against GStreamer's pipewiresrc, on a private PipeWire (docs/benchmarks.md).
	cc -std=c11 -O2 tools/testclients/pw-video-source.c -o .build/pw-video-source $$(pkg-config --cflags --libs libpipewire-0.3)
	tools/testenv run --no-x11 --no-nginx -- $(RELEASE_BIN)/livepush-bench pipewire --runs 3 --producer .build/pw-video-source
	# Camera capture (issue 32): YUY2 and MJPEG at 720p30 against GStreamer doing the same into BGRx.
	cc -std=c11 -O2 tools/testclients/pw-camera-source.c -o .build/pw-camera-source $$(pkg-config --cflags --libs libpipewire-0.3) -ljpeg
	tools/testenv run --no-x11 --no-nginx -- $(RELEASE_BIN)/livepush-bench camera --runs 3 --producer .build/pw-camera-source
# push benchmark (issue 6): livepush push, ffmpeg and GStreamer publishing to the test nginx-rtmp,
# with PulseAudio (pipewire-pulse) for the peers' audio: inside a private test environment. After the
# 1080p30 lines, in the same run (issue 22, about 15 min more): the scrolling screen, x264's floor,
# push + a CRF recording, 1080p60 and 1440p30 against ffmpeg (--extra none leaves them out).
	tools/testenv run --screen 1920x1080 -- $(RELEASE_BIN)/livepush-bench push --runs 3 --painter .build/x11-paint
# load benchmark (issue 29): the three publishers under a CPU hog of 2 busy loops (A/V offset, drift,
# pictures missing, sound holes at nginx), and a SIGSTOP of 800 ms of livepush push (video lost at nginx).
	tools/testenv run --screen 1920x1080 -- $(RELEASE_BIN)/livepush-bench load --runs 3 --painter .build/x11-paint
# allocation benchmark (issue 22): heap allocations per second of a steady 1080p30 push, counted by an LD_PRELOAD shim.
	cc -std=gnu11 -O2 -shared -fPIC tools/testclients/alloc-count.c -o .build/alloc-count.so
	tools/testenv run --screen 1920x1080 -- $(RELEASE_BIN)/livepush-bench alloc --runs 3 --painter .build/x11-paint \
	    --shim $(CURDIR)/.build/alloc-count.so
# control benchmark (issue 14): control-socket round trip, preview JPEG, event line.
	$(RELEASE_BIN)/livepush-bench control --runs 3
# picture benchmark (issue 16): a watermark's blend into 1080p, a PNG snapshot.
	$(RELEASE_BIN)/livepush-bench picture --runs 3
# adaptive resolution (issue 16b): what one size change costs the video thread.
	$(RELEASE_BIN)/livepush-bench resolution --runs 3
# portal capture (issue 21) on the real desktop of testenv --wayland, as its user, against pipewiresrc.
	tools/testenv run --wayland --no-x11 --no-nginx --no-pipewire -- \
	    sh -c '"$$LIVEPUSH_TEST_WAYLAND_AS_USER" $(abspath $(RELEASE_BIN))/livepush-bench portal --runs 3'

# The fault script of issue 8 on one push, in a private test environment: 50 helper kills,
# 5 hangs, 5 helpers that break the protocol mid-stream, 10 nginx restarts, then Ctrl-C. One line
# per fault kind (docs/benchmarks.md); `make test` runs a shorter one.
soak: build
	cc -std=c11 -O2 tools/testclients/x11-paint.c -o .build/x11-paint -lxcb
	tools/testenv run -- $(RELEASE_BIN)/livepush-bench soak --hostile Tests/Fixtures/hostile_helper.py \
	    --painter .build/x11-paint --kills 50 --hangs 5 --garbage 5 --nginx-restarts 10

clean:
	rm -rf .build

# liblivepush-capture: the helper side of Capture Link as a C11 library (protocol/lib/, libc
# only), with a versioned soname. LIB_CFLAGS adds flags (the tests build it under ASan+UBSan).
LIB_MAJOR = 1
LIB_VERSION = 1.0.0
LIB_DIR = .build/liblivepush-capture
LIB_SOURCES = protocol/lib/lpc_wire.c protocol/lib/lpc_helper.c protocol/lib/lpc_connect.c
LIB_HEADERS = protocol/livepush_capture.h protocol/livepush_capture_helper.h protocol/lib/lpc_wire.h \
    protocol/lib/lpc_session.h
LIB_CC ?= cc
LIB_CFLAGS ?=
LIB_SO = $(LIB_DIR)/liblivepush-capture.so.$(LIB_VERSION)

.PHONY: lib install-lib
lib: $(LIB_SO)

$(LIB_SO): $(LIB_SOURCES) $(LIB_HEADERS) Makefile
	@mkdir -p $(LIB_DIR)
	$(LIB_CC) -std=c11 -Wall -Wextra -Werror -O2 -g -fPIC -fvisibility=hidden -Iprotocol $(LIB_CFLAGS) -shared \
	    -Wl,-soname,liblivepush-capture.so.$(LIB_MAJOR) -o $@ $(LIB_SOURCES)
	ln -sf liblivepush-capture.so.$(LIB_VERSION) $(LIB_DIR)/liblivepush-capture.so.$(LIB_MAJOR)
	ln -sf liblivepush-capture.so.$(LIB_MAJOR) $(LIB_DIR)/liblivepush-capture.so

# Install for helper authors and users: the protocol headers, liblivepush-capture and its
# pkg-config file (install-lib), and the release executables with their man pages, bash and zsh
# completions, the user service, the dashboard's files and the docs (install-files).
#   make install [PREFIX=/usr/local] [DESTDIR=/staging]     make uninstall (same variables)
#   make install-lib: the library, headers and pkg-config file only (no Swift build)
#   install-files copies what is built without building (make deb uses it on its static build).
PREFIX ?= /usr/local
LIBDIR ?= $(PREFIX)/lib
INSTALL ?= install
PC_DIR = $(DESTDIR)$(LIBDIR)/pkgconfig
MAN_DIR = $(DESTDIR)$(PREFIX)/share/man/man1
BASH_COMPLETION_DIR = $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSH_COMPLETION_DIR = $(DESTDIR)$(PREFIX)/share/zsh/vendor-completions
USER_UNIT_DIR = $(DESTDIR)$(PREFIX)/lib/systemd/user
DOC_DIR = $(DESTDIR)$(PREFIX)/share/doc/livepush
MAN_GZIP ?=

install-lib: $(LIB_SO)
	$(INSTALL) -d $(DESTDIR)$(PREFIX)/include $(PC_DIR) $(DESTDIR)$(LIBDIR)
	$(INSTALL) -m 644 protocol/livepush_capture.h $(DESTDIR)$(PREFIX)/include/livepush_capture.h
	$(INSTALL) -m 644 protocol/livepush_capture_helper.h $(DESTDIR)$(PREFIX)/include/livepush_capture_helper.h
	$(INSTALL) -m 755 $(LIB_SO) $(DESTDIR)$(LIBDIR)/liblivepush-capture.so.$(LIB_VERSION)
	ln -sf liblivepush-capture.so.$(LIB_VERSION) $(DESTDIR)$(LIBDIR)/liblivepush-capture.so.$(LIB_MAJOR)
	ln -sf liblivepush-capture.so.$(LIB_MAJOR) $(DESTDIR)$(LIBDIR)/liblivepush-capture.so
	sed -e 's|@PREFIX@|$(PREFIX)|g' -e 's|@LIBDIR@|$(LIBDIR)|g' -e 's|@VERSION@|$(LIB_VERSION)|g' \
	    protocol/livepush-capture.pc.in > $(PC_DIR)/livepush-capture.pc
	chmod 644 $(PC_DIR)/livepush-capture.pc
	@# The dynamic linker finds a new library in /usr/local/lib only after ldconfig.
	@if [ -z "$(DESTDIR)" ] && [ "$(LIBDIR)" = /usr/local/lib ] && [ "$$(id -u)" = 0 ] && command -v ldconfig >/dev/null; then \
	    ldconfig; fi

install: build install-lib install-files

install-files:
	$(INSTALL) -d $(DOC_DIR)
	$(INSTALL) -m 644 README.md docs/*.md protocol/SPEC.md $(DOC_DIR)/
	@for exe in livepush livepush-capture; do \
	    if [ -x $(RELEASE_BIN)/$$exe ]; then \
	        $(INSTALL) -d $(DESTDIR)$(PREFIX)/bin $(MAN_DIR) $(BASH_COMPLETION_DIR) $(ZSH_COMPLETION_DIR) && \
	        $(INSTALL) -m 755 $(RELEASE_BIN)/$$exe $(DESTDIR)$(PREFIX)/bin/$$exe && \
	        $(RELEASE_BIN)/$$exe --generate-docs man > $(MAN_DIR)/$$exe.1 && \
	        $(RELEASE_BIN)/$$exe --generate-docs bash > $(BASH_COMPLETION_DIR)/$$exe && \
	        $(RELEASE_BIN)/$$exe --generate-docs zsh > $(ZSH_COMPLETION_DIR)/_$$exe && \
	        chmod 644 $(MAN_DIR)/$$exe.1 $(BASH_COMPLETION_DIR)/$$exe $(ZSH_COMPLETION_DIR)/_$$exe && \
	        if [ -n "$(MAN_GZIP)" ]; then gzip -9nf $(MAN_DIR)/$$exe.1; fi && \
	        echo "installed $(DESTDIR)$(PREFIX)/bin/$$exe, its man page and completions"; \
	    else \
	        echo "make install: $(RELEASE_BIN)/$$exe not built; not installed"; \
	    fi; \
	done
	$(INSTALL) -d $(USER_UNIT_DIR)
	sed -e 's|/usr/bin/livepush|$(PREFIX)/bin/livepush|g' tools/package/livepush@.service > $(USER_UNIT_DIR)/livepush@.service
	chmod 644 $(USER_UNIT_DIR)/livepush@.service
	@# The dashboard's and the report's page files: livepush finds them beside itself (issue 14).
	@if [ -d $(RELEASE_BIN)/LivePush_Dashboard.resources ]; then \
	    rm -rf $(DESTDIR)$(PREFIX)/bin/LivePush_Dashboard.resources && \
	    cp -R $(RELEASE_BIN)/LivePush_Dashboard.resources $(DESTDIR)$(PREFIX)/bin/ && \
	    echo "installed $(DESTDIR)$(PREFIX)/bin/LivePush_Dashboard.resources"; \
	fi

uninstall:
	rm -f $(DESTDIR)$(PREFIX)/include/livepush_capture.h $(DESTDIR)$(PREFIX)/include/livepush_capture_helper.h
	rm -f $(DESTDIR)$(LIBDIR)/liblivepush-capture.so.$(LIB_VERSION) $(DESTDIR)$(LIBDIR)/liblivepush-capture.so.$(LIB_MAJOR)
	rm -f $(DESTDIR)$(LIBDIR)/liblivepush-capture.so $(PC_DIR)/livepush-capture.pc
	rm -f $(DESTDIR)$(PREFIX)/bin/livepush $(DESTDIR)$(PREFIX)/bin/livepush-capture
	rm -f $(MAN_DIR)/livepush.1* $(MAN_DIR)/livepush-capture.1*
	rm -f $(BASH_COMPLETION_DIR)/livepush $(BASH_COMPLETION_DIR)/livepush-capture
	rm -f $(ZSH_COMPLETION_DIR)/_livepush $(ZSH_COMPLETION_DIR)/_livepush-capture
	rm -f $(USER_UNIT_DIR)/livepush@.service
	rm -rf $(DOC_DIR)
	rm -rf $(DESTDIR)$(PREFIX)/bin/LivePush_Dashboard.resources

# A Debian package with the Swift runtime linked in (tools/package/build-deb), and its test on a
# fresh Debian 12 made with debootstrap, which never saw the toolchain (tools/package/test-deb).
deb: bootstrap
	tools/package/build-deb

package-test: deb
	tools/package/test-deb
