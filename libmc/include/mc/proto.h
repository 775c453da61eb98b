/*
 * The mc protocol: method names and their fields. This comment is the
 * contract between mc-master, mc-peer and clients; man/mc-wire.5 is its
 * user-facing form. Framing and bulk rules are in mc/wire.h.
 *
 * Conventions: keys are byte strings (1..MC_KEY_MAX bytes), tenants and
 * data types are strings (1..MC_NAME_MAX). Sizes are bytes, times are
 * milliseconds since the epoch (mc_now_ms), durations milliseconds.
 * Optional fields may be absent; readers ignore unknown fields.
 * Errors: error map {"code": mc_status_name(), "msg": "..."}.
 *
 * ---- master, client-facing (a connection speaks for one tenant) ----
 *
 * hello {tenant?, token?, host?, domain?}
 *   -> {version: str, max_msg: uint}
 *   Sets the connection's tenant (default "default"); host/domain name the
 *   client's location for replica ordering.
 *
 * put_start {key, size, replicas?=1, type?="general", group?, hard_pin?=false,
 *            checksum, upsert?=false}
 *   -> {version, replicas: [{replica_id, peer_id, addr, tier, host, domain}]}
 *   Reserves space on `replicas` distinct peers (distinct hosts first, most
 *   free first, stable tie-break by peer id). Errors: exists (put of a key
 *   that exists, without upsert), no_space, invalid, busy (key being written).
 *   With upsert=true on an existing key: a new version; same size keeps the
 *   same peers, another size places anew; old replicas are dropped at end.
 *   Soft pin (a write action, committed when the write first makes the
 *   object readable): soft_pin?="preserve"|"enable"|"disable",
 *   soft_pin_ttl_ms? (only with "enable"; without it the master's
 *   --default-soft-pin-ttl; above --max-soft-pin-ttl is invalid; 0 means
 *   ordinary cache). Errors: invalid for any other combination.
 * put_end {key, version, replica_ids?: [uint]}   -> {}
 *   Marks the named (default: all) PROCESSING replicas of that version COMPLETE.
 * put_revoke {key, version, replica_ids?: [uint]} -> {}
 *   Discards the named (default: all) PROCESSING replicas; an object left
 *   with no replica at all is erased (an upsert falls back to the old version).
 *
 * get_replica_list {key}
 *   -> {version, size, checksum, type, lease_ms,
 *       replicas: [{replica_id, peer_id, addr, tier, host, domain}]}
 *   Only COMPLETE replicas, best first for the caller (same host, same
 *   domain, dram before ssd). Grants the read lease (--lease-ttl) to the
 *   object and, if it has a group, to every member; bumps access time/count.
 *   Errors: not_found (absent, or no COMPLETE replica yet).
 * batch_get_replica_list {keys: [key]}
 *   -> {items: [ {...same fields...} | {error: {code,msg}} ]}
 *   One item per key, in the order asked (keys are not echoed back).
 *
 * exist {key} -> {exists: bool}          (a COMPLETE replica exists; no lease)
 * batch_exist {keys: [key]} -> {exists: [bool]}
 * remove {key, force?=false} -> {}        Errors: not_found, leased (unless force)
 * batch_remove {keys: [key], force?} -> {errors: [nil | {code,msg}]}
 * remove_prefix {prefix, force?} -> {removed: uint, skipped: uint}
 * list {prefix?="", limit?=1000, after?} -> {keys: [{key, size, version, type}],
 *       more: bool}   sorted by key; `after` continues a listing.
 * stat {key} -> {key, tenant, size, version, checksum, type, group?, hard_pin,
 *       created, last_access, access_count, lease_deadline, soft_pin: str,
 *       replicas: [{replica_id, peer_id, addr, tier, state: "processing"|"complete"}]}
 * stats {} -> {objects, bytes, peers, tenants: [{tenant, objects, bytes}],
 *       uptime_ms, version}
 * peers {} -> {peers: [{peer_id, addr, host, domain, alive, evict_mode,
 *       tiers: [{tier, capacity, used}], last_heartbeat}]}
 *
 * ---- master, eviction (mc-evict-plan, mc-cli candidates) ----
 *
 * candidates {peer_id?, tier?, tenant?} -> {count, len} + len raw bytes
 *   The candidate view (man/mc-candidates.5, msgpack stream form) of
 *   every evictable copy: one record per COMPLETE replica of the current
 *   version, hard-pinned objects left out, filtered by peer, tier and
 *   tenant name when given (all tenants otherwise: an admin call).
 * evict_plan {len} + len raw bytes (a plan, man/mc-plan.5, msgpack)
 *   -> {len, evicted_bytes, evicted_objects} + len raw bytes (the report,
 *   man/mc-report.5, msgpack)
 *   Executes the plan as the master's own rounds do: stage by stage, each
 *   victim found again and revalidated, fallbacks run against actual
 *   bytes, in slices between other requests. Answered when it is done.
 *   Plans and rounds run one at a time, in arrival order; with 64
 *   waiting, another is refused as busy.
 * evict_run {target, lowerbound?, tenant?, peer_id?, tier?, dry_run?=false}
 *   -> {len, kind: "plan"|"report", evicted_bytes, evicted_objects}
 *      + len raw bytes
 *   A round of the master's own: builds the view (filtered as for
 *   candidates), plans with its policy (--evict-policy, or the
 *   --evict-planner command) for target bytes (lowerbound: bytes, default
 *   the policy's root lowerbound, as mc-evict-plan takes it), then executes it and
 *   answers the report; with dry_run it answers the plan and executes
 *   nothing.
 *
 * ---- master, soft pins (mc-softpin) ----
 *
 * softpin_show {key} -> {state: "disabled"|"pending"|"active", deadline,
 *       remaining_ms, pending_action?, pending_ttl_ms?}
 *   deadline and remaining_ms are 0 unless active. Reads nothing else and
 *   changes nothing (no lease, no access time).
 * softpin_list {due_within_ms?, limit?=1000} -> {items: [{tenant, key,
 *       deadline}], more: bool}   active pins by deadline, from the index
 *   (all tenants: an admin call); due_within_ms bounds the deadline.
 * softpin_stats {} -> {active, heap, live, rebuilds, cleanup_runs, expired,
 *       default_ttl_ms, max_ttl_ms}
 * softpin_expire {} -> {expired: uint, cycle_ns: uint, items: [{tenant, key,
 *       deadline}]}
 *   Runs one cleanup cycle now (the same one the background runs);
 *   cycle_ns is what the cycle itself took inside the master.
 *
 * ---- master, snapshots (mc-snapshot) ----
 *
 * snapshot_save {stream?=false}
 *   -> {path, created, objects, size}  [+ size raw bytes when stream]
 *   Writes a snapshot now (a forked child writes it from a copy-on-write
 *   image; the master keeps serving) into --snapshot-dir, or to a
 *   temporary file when there is none and stream is set; answers when the
 *   file is complete. With stream the file's bytes follow as the bulk.
 *   A request that arrives while one is being written waits for it and
 *   gets the same answer. Errors: unavailable (no --snapshot-dir and no
 *   stream), system (the child failed; msg says why).
 * snapshot_restore {len, force?=false} + len raw bytes of a snapshot file
 *   -> {objects, peers, tenants}
 *   Loads the file into this master. Errors: exists (the master holds
 *   objects; use force to replace them), proto (the file is bad: msg says
 *   what; nothing of it stays loaded).
 * snapshot_status {}
 *   -> {dir, interval_ms, keep, in_progress: bool, restoring: bool,
 *       last: {path, created, objects, size, millis} | nil,
 *       reconcile_deadline: ms | 0}
 *
 * ---- master, peer-facing ----
 *
 * peer_register {addr, host, domain, evict_mode?="local",
 *                tiers: [{tier, capacity, used}],
 *                resume?: {peer_id, session, since}}
 *   -> {peer_id, session, resumed: bool, heartbeat_ms, peer_ttl_ms}
 *   session (32 hex digits) is drawn at a fresh registration; a peer
 *   shows it with its peer_id in every later registration. The master
 *   resumes (same id, replicas and metadata kept) a live peer at the same
 *   addr with that token; otherwise it registers the peer anew, and an
 *   older entry at the same addr becomes a ghost whose replicas the new
 *   peer's inventory confirms. since: the change number last acknowledged.
 * peer_heartbeat {peer_id, tiers: [{tier, capacity, used}], seq?} -> {}
 *   seq: the peer's index change number; once the report after the last
 *   registration is done, an answer acknowledges every change up to it.
 *   Errors: not_found (unknown peer: register again).
 * peer_unregister {peer_id} -> {}
 * peer_inventory {peer_id, items: [{tenant, key, tier, size, version,
 *                 checksum}], done: bool, delta?: bool,
 *                 removed?: [{tenant, key, version}]}
 *   -> {kept, adopted, dropped, removed}
 *   After every registration a peer reports what it holds, at most
 *   MC_INVENTORY_CHUNK items a call, the last with done=true. The master
 *   confirms a replica it knew (same size, version, checksum), adopts a
 *   complete copy of an object it does not know, and drops (and tells the
 *   peer to drop) a copy that disagrees with its metadata; at done, the
 *   replicas on the peer it did not confirm are dropped. After a resume a
 *   peer may send a delta instead: the copies it removed since the
 *   acknowledged change number (removed, each forgetting that peer's
 *   replica up to version; all before any items), then the entries linked
 *   since (items). After a restore, replicas that no live peer confirms
 *   within --reconcile-timeout are dropped; objects left without any are
 *   erased.
 * Master -> peer notification on the peer's control connection:
 *   drop {items: [{tenant, key, version}]}
 *   The peer frees its copy of each key whose stored version is <= version.
 *
 * ---- peer data plane (the peer's --listen address) ----
 *
 * write {tenant, key, version, len, checksum?, tier?=dram} + len raw bytes
 *   -> {}   Errors: no_space (bulk discarded), invalid, too_large.
 *   A newer version replaces an older copy atomically once all bytes are in.
 * read {tenant, key, version?} -> {len, version, checksum} + len raw bytes
 *   Errors: not_found (absent, or a different version than asked).
 * drop {tenant, key, version?} -> {}     (same as the master's notification)
 * peer_stats {} -> {tiers: [{tier, capacity, used, objects}], reads, writes}
 * corrupt {tenant, key, offset} -> {}    Only with mc-peer --fault-inject:
 *   flips one byte of the stored copy, for tests of checksum fallback.
 */
#ifndef MC_PROTO_H
#define MC_PROTO_H

#define MC_PROTO_VERSION "1"
#define MC_KEY_MAX 4096
#define MC_NAME_MAX 128
#define MC_REPLICAS_MAX 16
#define MC_DEFAULT_TENANT "default"
#define MC_DEFAULT_TYPE "general"
#define MC_INVENTORY_CHUNK 1024

#endif
