# mc: build, test, run, bench, check, install.
# Sources are found by wildcard: a new libmc module, program folder or
# unit test needs no edit here.

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
# The one version: every program's --version, the soname, mc.pc.
VERSION := 0.1.0
SOVERSION := 0
# What the client library needs; the daemons need libevent and libsodium
# besides (the auth file's hashes, the data plane's grants, which the
# client carries opaque).
CLIENT_PKGS := msgpack libzstd libxxhash
PKGS := $(CLIENT_PKGS) libevent libevent_pthreads libsodium

CFLAGS ?= -O2 -g
MC_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC \
	-DMC_VERSION='"$(VERSION)"' \
	-Ilibmc/include $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
CLIENT_LDLIBS := $(shell pkg-config --libs $(CLIENT_PKGS) 2>/dev/null || echo -lmsgpackc -lzstd -lxxhash) -lpthread -lm
LDLIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lmsgpackc -levent -levent_pthreads -lzstd -lxxhash -lsodium) -lpthread -lm
BUILD := build
# Where the programs go; make test SANITIZE=1 builds them into bin-san/.
BIN_DIR := bin
# How many compilers the builds behind test, run, bench and check run at once.
JOBS ?= $(shell nproc 2>/dev/null || echo 2)

# The unit tests again, under AddressSanitizer and UBSan (make check).
SAN_BUILD := build-san
SAN_CFLAGS := -O1 -g -fsanitize=address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined

# The policy engine and the transports are subsystems of libmc in folders
# of their own (libmc/policy/, libmc/net/); their headers are in include/mc/
# with the others.
LIB_SRC := $(wildcard libmc/*.c libmc/policy/*.c libmc/net/*.c)
# The modules on libevent serve only the daemons: they go into an internal
# archive, so the installed libmc (client API, codecs, policy engine)
# pulls nothing of libevent or libsodium into a user's build.
DAEMON_SRC := libmc/conn.c libmc/conn_call.c libmc/registry.c libmc/listener.c libmc/metrics.c libmc/authfile.c libmc/grant.c libmc/receipt.c libmc/rate.c
LIB_OBJ := $(filter-out $(DAEMON_SRC:%.c=$(BUILD)/%.o),$(LIB_SRC:%.c=$(BUILD)/%.o))
DAEMON_OBJ := $(DAEMON_SRC:%.c=$(BUILD)/%.o)
LIBS := $(BUILD)/libmc-daemon.a $(BUILD)/libmc.a
SONAME := libmc.so.$(SOVERSION)
# A program is a cmd/ folder holding at least one .c file, so an empty
# folder someone just created does not break the build.
PROGS := $(sort $(patsubst cmd/%/,%,$(dir $(wildcard cmd/*/*.c))))
BINS := $(PROGS:%=$(BIN_DIR)/%)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BINS := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tools/%)
HEADERS := $(wildcard libmc/include/mc/*.h)
# What make install puts under include/mc: the client API and what it includes.
PUBLIC_HEADERS := $(addprefix libmc/include/mc/,client.h err.h proto.h)
MAN_PAGES := $(wildcard man/*.[1-8])
COMPLETIONS := completions/mc.bash completions/_mc

# Everything clang-format and cppcheck look at.
C_FILES := $(wildcard libmc/*.c libmc/*.h libmc/policy/*.c libmc/policy/*.h libmc/net/*.c libmc/net/*.h \
	$(HEADERS) cmd/*/*.c cmd/*/*.h \
	tests/unit/*.c tests/unit/*.h tests/tools/*.c tests/tools/*.h \
	tests/fuzz/*.c tests/fuzz/*.h tests/bench/*.c tests/bench/*.h)

# make deps: what a fresh Debian 12 machine needs to build, test, bench, check.
# clang (with libFuzzer, in libclang-rt) builds only the fuzz targets:
# without it everything else still builds, and make fuzz says it is missing.
# python3 is Debian's, for the test tools and helpers that call /usr/bin/python3.
DEB_PKGS := build-essential pkg-config libevent-dev libmsgpack-dev libzstd-dev \
	libxxhash-dev libsodium-dev libibverbs-dev bats bats-support bats-assert redis-server \
	redis-tools mandoc clang-format cppcheck iproute2 procps bc jq zstd \
	clang libclang-rt-14-dev python3 zsh bsdutils

.PHONY: all test unit cli run bench check check-format check-cppcheck \
	check-man check-lint check-san install clean deps completions fuzz fuzz-build fuzz-check san-build \
	FORCE
# Keep objects: they are intermediate files of chained pattern rules, which
# make would otherwise delete after every build and then rebuild.
.SECONDARY:

all: $(BINS) $(BUILD)/libmc.a $(BUILD)/libmc.so $(UNIT_BINS) $(TOOL_BINS) completions

# Header dependencies come from the compiler (-MMD); -MP keeps a removed
# header from breaking the build.
$(BUILD)/%.o: %.c
	@mkdir -p $(dir $@)
	$(CC) $(MC_CFLAGS) $(CFLAGS) -MMD -MP -c -o $@ $<

-include $(wildcard $(BUILD)/*/*.d $(BUILD)/*/*/*.d)

# A program's unit tests see its private headers.
# ($* is the %.o rule's stem when the recipe expands this: tests/unit/test_NAME.)
$(BUILD)/tests/unit/%.o: MC_CFLAGS += $(if $(call unit_prog,$(notdir $*)),-Icmd/$(call unit_prog,$(notdir $*)))

$(BUILD)/libmc.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libmc-daemon.a: $(DAEMON_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

# libmc.so.VERSION, with the soname link libmc.so.0 and the link libmc.so.
# It exports the functions of the installed headers and nothing else:
# libmc's objects are compiled with hidden visibility (the public headers
# mark theirs default) and the version script lists the same functions
# (tests/cli/exports.bats compares them). The programs, the unit tests
# and the test tools link libmc.a, where every module stays reachable.
LIB_MAP := libmc/libmc.map
$(BUILD)/libmc/%.o: MC_CFLAGS += -fvisibility=hidden
$(BUILD)/libmc.so: $(LIB_OBJ) $(LIB_MAP)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -shared -Wl,-soname,$(SONAME) -Wl,--no-undefined \
		-Wl,--version-script=$(LIB_MAP) -o $@.$(VERSION) \
		$(LIB_OBJ) $(CLIENT_LDLIBS)
	ln -sf libmc.so.$(VERSION) $(BUILD)/$(SONAME)
	ln -sf $(SONAME) $@

# A program's objects. A function, because a literal % in a pattern rule's
# prerequisites is replaced by the stem before secondary expansion.
prog_objs = $(patsubst %.c,$(BUILD)/%.o,$(wildcard cmd/$(1)/*.c))
.SECONDEXPANSION:
$(BIN_DIR)/%: $$(call prog_objs,$$*) $(LIBS)
	@mkdir -p $(BIN_DIR)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# A unit test named test_PROG_THING.c (PROG a program without its mc-
# prefix, e.g. test_peer_arena.c) links that program's modules, all but
# main.c, so a daemon's parts are tested on their own. test_NAME.c (one
# word: test_snapshot.c) tests libmc's module NAME.
prog_mods = $(filter-out %/main.o,$(call prog_objs,$(1)))
unit_prog = $(if $(word 3,$(subst _, ,$(1))),$(if $(filter $(word 2,$(subst _, ,$(1))),$(PROGS:mc-%=%)),mc-$(word 2,$(subst _, ,$(1)))))
$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $$(if $$(call unit_prog,$$*),$$(call prog_mods,$$(call unit_prog,$$*))) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tools/%: $(BUILD)/tests/tools/%.o $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# mc-rankbench times the master's own recency index in-process: it links
# the master's modules (all but main.c) and sees their headers.
$(BUILD)/tests/tools/mc-rankbench.o: MC_CFLAGS += -Icmd/mc-master
$(BUILD)/tools/mc-rankbench: $(BUILD)/tests/tools/mc-rankbench.o $(call prog_mods,mc-master) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# mc-peerplan times the peer's local planning in-process: it links the
# peer's modules (all but main.c) and sees their headers.
$(BUILD)/tests/tools/mc-peerplan.o: MC_CFLAGS += -Icmd/mc-peer
$(BUILD)/tools/mc-peerplan: $(BUILD)/tests/tools/mc-peerplan.o $(call prog_mods,mc-peer) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

# Completions come from the programs' own --list-options, so they are
# regenerated whenever a program is rebuilt and cannot drift from it. gen
# rewrites a file only when its content changes (the files are committed).
completions: $(COMPLETIONS)
$(COMPLETIONS) &: completions/gen $(BINS)
	completions/gen $(BINS)

# Always rewritten: PREFIX may differ between build and install. Written
# beside and renamed, so two installs at once (two suites) never read a
# half-written file. Two files: mc.pc links libmc.so, and carries an rpath
# when the prefix is not one the dynamic linker searches (/usr,
# /usr/local); mc-static.pc links libmc.a, its dependencies staying shared.
# pkg-config --static mc adds what a fully static link (cc -static) needs.
comma := ,
PC_RPATH := $(if $(filter /usr /usr/local,$(PREFIX)),,-Wl$(comma)-rpath$(comma)$${libdir} )
pc_head = printf '%s\n' 'prefix=$(PREFIX)' 'exec_prefix=$${prefix}' \
	'libdir=$${exec_prefix}/lib' 'includedir=$${prefix}/include' '' \
	'Version: $(VERSION)' 'Cflags: -I$${includedir}'
$(BUILD)/mc.pc: FORCE
	@mkdir -p $(dir $@)
	{ $(pc_head) && printf '%s\n' 'Name: mc' \
		'Description: client library of the mc distributed KV-cache store' \
		'Requires.private: $(CLIENT_PKGS)' \
		'Libs: -L$${libdir} $(PC_RPATH)-lmc' \
		'Libs.private: -lpthread -lm'; } > $@.tmp.$$$$ && mv -f $@.tmp.$$$$ $@
$(BUILD)/mc-static.pc: FORCE
	@mkdir -p $(dir $@)
	{ $(pc_head) && printf '%s\n' 'Name: mc-static' \
		'Description: client library of the mc distributed KV-cache store, linked statically' \
		'Requires: $(CLIENT_PKGS)' \
		'Libs: $${libdir}/libmc.a -lpthread -lm'; } > $@.tmp.$$$$ && mv -f $@.tmp.$$$$ $@

# ---- dependencies, tests, a local cluster, benchmarks ----

# A no-op when everything is installed; otherwise one apt-get update and
# one install of exactly the missing packages (sudo only when not root).
deps:
	@missing=; \
	for p in $(DEB_PKGS); do \
		dpkg-query -W -f='$${Status}\n' "$$p" 2>/dev/null | \
			grep -q ' installed$$' || missing="$$missing $$p"; \
	done; \
	if [ -z "$$missing" ]; then \
		echo "deps: all $(words $(DEB_PKGS)) packages are installed"; exit 0; \
	fi; \
	sudo=; [ "$$(id -u)" -eq 0 ] || sudo=sudo; \
	echo "deps: installing$$missing"; \
	$$sudo apt-get update && \
	$$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y $$missing

# deps first, then a fresh make so the build sees what deps installed
# (pkg-config flags are computed when make starts).
# make test SANITIZE=1: the same tests against ASan+UBSan builds of every
# program, tool and unit test (build-san/, bin-san/; see SAN_ENV).
test: deps
ifeq ($(SANITIZE),1)
	@$(MAKE) --no-print-directory -j$(JOBS) san-build
	@$(call san_run,$(SAN_ENV) tests/run)
else
	@$(MAKE) --no-print-directory -j$(JOBS) all
	tests/run
endif

unit: $(UNIT_BINS)
	@MC_TEST_BATS=0 tests/run

cli: $(BINS) $(TOOL_BINS)
	@MC_TEST_UNIT=0 tests/run

run: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	examples/local-cluster.sh

# A soak of SECONDS (default 60) with kills, restarts and faults; not in
# CI. It prints each invariant with its count (tests/soak/run).
SECONDS ?= 60
soak: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	tests/soak/run $(SECONDS)

bench: deps
	@$(MAKE) --no-print-directory -j$(JOBS) all
	tests/bench/run
	tests/bench/snapshot
	tests/bench/softpin
	tests/bench/evict
	tests/bench/fullcache
	tests/bench/occupancy
	tests/bench/policy
	tests/bench/ssd
	tests/bench/ssdmix
	tests/bench/rank
	tests/bench/replicate

# ---- make check: format, static analysis, man pages, sanitizers ----

check: check-format check-cppcheck check-man check-examples check-lint check-san fuzz-check

check-format:
	clang-format --dry-run --Werror $(C_FILES)

# Suppressed: system headers cppcheck cannot see, and the msgpack/libevent
# macros it does not understand without them.
check-cppcheck:
	cppcheck --quiet --error-exitcode=1 --std=c11 --inline-suppr \
		--enable=warning,portability,performance \
		-D_GNU_SOURCE -Ilibmc/include \
		--suppress=missingIncludeSystem --suppress=unknownMacro \
		--suppress=normalCheckLevelMaxBranches \
		$(filter %.c,$(C_FILES))

check-man:
	mandoc -Tlint -Wwarning $(MAN_PAGES)

# Every code example of the man pages (tests/tools/man-examples): C
# compiled against this build's libmc and run against a local cluster,
# with its output; shell sessions parsed and, where marked, run there;
# policies and JSON read.
.PHONY: check-examples
check-examples: $(BINS) $(BUILD)/libmc.a
	MC_EXAMPLE_CC="$(CC)" MC_EXAMPLE_LIBS="$(BUILD)/libmc.a $(CLIENT_LDLIBS)" \
		tests/tools/man-examples check $(MAN_PAGES)

# Suites that cannot pass by accident: no sleep outside the reviewed
# tests/lint/sleep.allow, no run whose status and output nothing reads.
# And the transport seam holds: nothing outside libmc/net/ calls recv,
# send and the like on a socket (tests/lint/sockets.allow).
check-lint:
	tests/lint/bats
	tests/lint/sockets

# The sanitizer builds: every program, tool and unit test under ASan and
# UBSan, in build-san/ and bin-san/. Leaks are errors, except option
# values read from a --config file: they are kept for the life of the
# process on purpose (LSAN_SUPPRESSIONS). An ASan or LSan report goes to
# a file of build-san/reports/ instead of stderr, so a daemon's is seen
# although nobody reads its stderr, and a tool's does not disturb a test
# that compares output: after the run, any report fails it. UBSan (gcc's
# does not take log_path) stops the program at its first report, on its
# stderr, which fails the test that ran it.
SAN_BIN := bin-san
LSAN_SUPPRESSIONS := leak:apply_config
SAN_REPORTS := $(CURDIR)/$(SAN_BUILD)/reports
# The sanitizer pass replays the first 2,000 of the trace's 12,031
# requests (tests/cli/helpers.bash, mc_trace): the same code paths under
# ASan at a sixth of the volume; make test and make bench replay it whole.
SAN_TRACE_REQUESTS := 2000
SAN_ENV := MC_TEST_BUILD=$(SAN_BUILD) MC_TEST_BIN=$(SAN_BIN) MC_TEST_TOOLS=$(SAN_BUILD)/tools \
	MC_BATS_TIMEOUT=1200 MC_TEST_TRACE_REQUESTS=$(SAN_TRACE_REQUESTS) \
	ASAN_OPTIONS=detect_leaks=1:log_path=$(SAN_REPORTS)/asan \
	LSAN_OPTIONS=suppressions=$(CURDIR)/$(SAN_BUILD)/lsan.supp:print_suppressions=0 \
	UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
# Run $(1) with an empty report folder; fail when it fails or left a report.
san_run = rm -rf $(SAN_REPORTS) && mkdir -p $(SAN_REPORTS) && \
	printf '%s\n' $(LSAN_SUPPRESSIONS) >$(SAN_BUILD)/lsan.supp && \
	{ $(1); rc=$$?; \
	for f in $(SAN_REPORTS)/*; do [ -e "$$f" ] || continue; \
		echo "sanitizer report $$f:"; cat "$$f"; rc=1; done; \
	exit $$rc; }

san-build:
	@$(MAKE) --no-print-directory BUILD=$(SAN_BUILD) BIN_DIR=$(SAN_BIN) CFLAGS="$(SAN_CFLAGS)" \
		$(PROGS:%=$(SAN_BIN)/%) $(UNIT_SRC:tests/unit/%.c=$(SAN_BUILD)/tests/%) \
		$(TOOL_SRC:tests/tools/%.c=$(SAN_BUILD)/tools/%)

# make check: the unit tests and every bats suite under the sanitizers,
# make test SANITIZE=1 itself (about 7 minutes on two cores).
check-san:
	@$(MAKE) --no-print-directory test SANITIZE=1

# ---- fuzz ----
# make fuzz [FUZZ_SECONDS=60]: each target tests/fuzz/fuzz_*.c under
# libFuzzer with AddressSanitizer and UBSan, for FUZZ_SECONDS each. The
# objects are built with clang into build-fuzz/, by the same rules as
# build/: fuzz_PROG_THING.c links PROG's modules as a unit test does,
# the other files of tests/fuzz/ are the targets' shared helpers. A
# target starts from its seed corpus, tests/fuzz/corpus/TARGET/, and
# replays every input that ever crashed it, tests/fuzz/regress/TARGET/;
# what it finds besides goes to build-fuzz/corpus/TARGET/, a crasher to
# build-fuzz/crash/TARGET-*. make check runs the short pass, fuzz-check.
FUZZ_SECONDS ?= 60
FUZZ_BUILD := build-fuzz
FUZZ_CC := clang
FUZZ_CFLAGS := -O1 -g -fsanitize=fuzzer-no-link,address,undefined -fno-omit-frame-pointer \
	-fno-sanitize-recover=undefined
FUZZ_SRC := $(wildcard tests/fuzz/fuzz_*.c)
FUZZ_HELPERS := $(filter-out $(FUZZ_SRC),$(wildcard tests/fuzz/*.c))
FUZZ_NAMES := $(FUZZ_SRC:tests/fuzz/%.c=%)
FUZZ_RUN := -max_len=65536 -timeout=10 -print_final_stats=1

$(BUILD)/tests/fuzz/%.o: MC_CFLAGS += -Itests/fuzz $(if $(call unit_prog,$(notdir $*)),-Icmd/$(call unit_prog,$(notdir $*)))

$(BUILD)/fuzz/%: $(BUILD)/tests/fuzz/%.o $(FUZZ_HELPERS:%.c=$(BUILD)/%.o) $$(if $$(call unit_prog,$$*),$$(call prog_mods,$$(call unit_prog,$$*))) $(LIBS)
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -fsanitize=fuzzer -o $@ $^ $(LDLIBS)

fuzz-build:
	@command -v $(FUZZ_CC) >/dev/null || { \
		echo "fuzz: needs $(FUZZ_CC) (make deps installs it)"; exit 1; }
	@$(MAKE) --no-print-directory -j$(JOBS) BUILD=$(FUZZ_BUILD) CC=$(FUZZ_CC) CFLAGS="$(FUZZ_CFLAGS)" \
		$(FUZZ_NAMES:%=$(FUZZ_BUILD)/fuzz/%)

# Every target with the libFuzzer options $(1); each prints its
# executions and what it found, and the first that fails stops the run.
fuzz_all = for t in $(FUZZ_NAMES); do \
		mkdir -p $(FUZZ_BUILD)/corpus/$$t $(FUZZ_BUILD)/crash tests/fuzz/regress/$$t; \
		dict=; [ -f tests/fuzz/dict/$$t.dict ] && dict=-dict=tests/fuzz/dict/$$t.dict; \
		$(FUZZ_BUILD)/fuzz/$$t $(FUZZ_RUN) $(1) $$dict -artifact_prefix=$(FUZZ_BUILD)/crash/$$t- \
			$(FUZZ_BUILD)/corpus/$$t tests/fuzz/corpus/$$t tests/fuzz/regress/$$t \
			>$(FUZZ_BUILD)/$$t.log 2>&1; \
		rc=$$?; \
		echo "fuzz: $$t: $$(grep -h '^stat::number_of_executed_units' \
			$(FUZZ_BUILD)/$$t.log | tr -dc 0-9) executions"; \
		if [ $$rc -ne 0 ]; then \
			grep -E '^(==[0-9]+==ERROR|SUMMARY|.*runtime error)' $(FUZZ_BUILD)/$$t.log; \
			echo "fuzz: $$t failed, see $(FUZZ_BUILD)/$$t.log"; exit 1; \
		fi; \
	done

fuzz: fuzz-build
	@$(call fuzz_all,-max_total_time=$(FUZZ_SECONDS))

# make check's pass: every seed and regression input, then 5 s of each.
fuzz-check: fuzz-build
	@$(call fuzz_all,-max_total_time=5)

# ---- install ----

BINDIR := $(DESTDIR)$(PREFIX)/bin
LIBDIR := $(DESTDIR)$(PREFIX)/lib
INCDIR := $(DESTDIR)$(PREFIX)/include/mc
MANDIR := $(DESTDIR)$(PREFIX)/share/man
BASHDIR := $(DESTDIR)$(PREFIX)/share/bash-completion/completions
ZSHDIR := $(DESTDIR)$(PREFIX)/share/zsh/site-functions
# the shipped policies; kv.policy is also the built-in default
POLICYDIR := $(DESTDIR)$(PREFIX)/share/mc/policies
POLICIES := $(wildcard examples/policies/*.policy)

install: $(BINS) $(BUILD)/libmc.a $(BUILD)/libmc.so $(BUILD)/mc.pc $(BUILD)/mc-static.pc $(COMPLETIONS)
	install -d $(BINDIR) $(LIBDIR)/pkgconfig $(INCDIR) $(BASHDIR) $(ZSHDIR) $(POLICYDIR)
	$(if $(BINS),install -m 755 $(BINS) $(BINDIR))
	install -m 644 $(BUILD)/libmc.a $(LIBDIR)
	install -m 755 $(BUILD)/libmc.so.$(VERSION) $(LIBDIR)
	ln -sf libmc.so.$(VERSION) $(LIBDIR)/$(SONAME)
	ln -sf $(SONAME) $(LIBDIR)/libmc.so
	install -m 644 $(BUILD)/mc.pc $(BUILD)/mc-static.pc $(LIBDIR)/pkgconfig
	install -m 644 $(PUBLIC_HEADERS) $(INCDIR)
	for p in $(MAN_PAGES); do \
		s=$${p##*.}; install -d $(MANDIR)/man$$s && \
		install -m 644 $$p $(MANDIR)/man$$s || exit 1; \
	done
	# bash-completion loads a file named after the command: one file,
	# a link per program.
	install -m 644 completions/mc.bash $(BASHDIR)/mc
	for p in $(PROGS); do ln -sf mc $(BASHDIR)/$$p || exit 1; done
	install -m 644 completions/_mc $(ZSHDIR)/_mc
	install -m 644 $(POLICIES) $(POLICYDIR)

FORCE:

clean:
	rm -rf $(BUILD) $(SAN_BUILD) $(FUZZ_BUILD) bin $(SAN_BIN)
