# mc: build, test, run, bench, check, install.
# Sources are found by wildcard: a new libmc module, program folder or
# unit test needs no edit here.

PREFIX ?= /usr/local
DESTDIR ?=
CC ?= cc
PKGS := msgpack libevent libevent_pthreads libzstd libxxhash

CFLAGS ?= -O2 -g
MC_CFLAGS := -std=c11 -D_GNU_SOURCE -Wall -Wextra -Werror -fPIC \
	-Ilibmc/include $(shell pkg-config --cflags $(PKGS) 2>/dev/null)
LDLIBS := $(shell pkg-config --libs $(PKGS) 2>/dev/null || echo -lmsgpackc -levent -levent_pthreads -lzstd -lxxhash) -lpthread -lm
BUILD := build

LIB_SRC := $(wildcard libmc/*.c)
LIB_OBJ := $(LIB_SRC:%.c=$(BUILD)/%.o)
PROGS := $(notdir $(wildcard cmd/*))
BINS := $(PROGS:%=bin/%)
UNIT_SRC := $(wildcard tests/unit/test_*.c)
UNIT_BINS := $(UNIT_SRC:tests/unit/%.c=$(BUILD)/tests/%)
TOOL_SRC := $(wildcard tests/tools/*.c)
TOOL_BINS := $(TOOL_SRC:tests/tools/%.c=$(BUILD)/tools/%)

.PHONY: all test unit cli run bench check install clean deps
all: $(BINS) $(BUILD)/libmc.a $(BUILD)/libmc.so $(UNIT_BINS) $(TOOL_BINS)

$(BUILD)/%.o: %.c $(wildcard libmc/include/mc/*.h) $(wildcard cmd/*/*.h)
	@mkdir -p $(dir $@)
	$(CC) $(MC_CFLAGS) $(CFLAGS) -c -o $@ $<

$(BUILD)/libmc.a: $(LIB_OBJ)
	@mkdir -p $(dir $@)
	rm -f $@ && ar rcs $@ $^

$(BUILD)/libmc.so: $(LIB_OBJ)
	$(CC) -shared -o $@ $^ $(LDLIBS)

.SECONDEXPANSION:
bin/%: $$(patsubst %.c,$(BUILD)/%.o,$$(wildcard cmd/$$*/*.c)) $(BUILD)/libmc.a
	@mkdir -p bin
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tests/%: $(BUILD)/tests/unit/%.o $(BUILD)/libmc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

$(BUILD)/tools/%: $(BUILD)/tests/tools/%.o $(BUILD)/libmc.a
	@mkdir -p $(dir $@)
	$(CC) $(CFLAGS) -o $@ $^ $(LDLIBS)

unit: $(UNIT_BINS)
	@for t in $(UNIT_BINS); do echo "# $$t"; $$t || exit 1; done

clean:
	rm -rf $(BUILD) bin
