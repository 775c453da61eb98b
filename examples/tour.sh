# At the top of the checkout, with make run going in another terminal:
export PATH=$PWD/bin:$PATH
tour=$(mktemp -d)                  # the tour's own files

mc-cli peers                       # two peers, 256 MiB of DRAM each
echo 'hello, cache' | mc-cli put greeting
mc-cli get greeting                # hello, cache

mc-cli put services /etc/services --replicas 2 --type general
mc-cli stat services               # size, version, checksum, both replicas
mc-cli ls                          # greeting, services
mc-cli --json ls                   # one JSON object per line

mc-cli -t other exist greeting; echo $?   # 1: tenants are separate

mc-cli get greeting >/dev/null     # a read leases the object while it reads...
mc-cli rm greeting                 # ...and releases it after: this works
                                   # (a key mid-read says 'leased'; --force)

mc-cli stat                        # cluster totals

mc-snapshot save                   # a file in run/snapshots, kept after Ctrl-C
mc-snapshot save -o "$tour/meta.mcs" && mc-snapshot verify "$tour/meta.mcs"
mc-snapshot inspect "$tour/meta.mcs"   # counts per tenant and type

head -c 4096 /dev/zero >"$tour/block"
mc-cli -t chat put --type kv 'chat7#0' "$tour/block"          # a prompt's first block...
mc-cli -t chat put --type kv --chain 'chat7#1' "$tour/block"  # ...and the next: parent chat7#0
mc-cli --json candidates --tenant chat   # depth, children, worth (crf)
                                   # the built-in kv.policy evicts a chain's
                                   # tail first, and orphans before anything
mc-cli candidates --tenant chat | mc-evict-plan -p examples/policies/kv.policy \
    --target 4KiB --explain        # the kv ranker picks one block's worth
mc-cli candidates --tenant chat | mc-evict-plan -p examples/policies/kv.policy \
    --target 4KiB | mc-cli evict --plan -   # evicts the tail, chat7#1
mc-cli -t chat ls                  # chat7#0

zstd -dc tests/cli/fixtures/traces/conversation_trace.jsonl.zst >"$tour/trace.jsonl"
mc-bench sim --capacity 2% --block-bytes 4KiB "$tour/trace.jsonl"
                                   # the built-in policy offline, beside
                                   # LRU, LFU, S3-FIFO, ARC and OPT

kill -9 "$(cat run/peer2.pid)"     # a crash: peer 2 held a copy of services
mc-cli get services | cmp - /etc/services && echo intact   # intact: the other copy
mc-cli peers                       # peer 2 goes after the peer TTL (10 s)
rm -r "$tour"
