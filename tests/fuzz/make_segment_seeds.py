#!/usr/bin/env python3
"""Writes the seed inputs of the segment_checker and segment_reader fuzzers.

One seed per damage kind of tests/substrate/invariants_test.cpp, as edits
of the sound segment (format: tests/fuzz/segment_edits.hpp). Each input is
b"E" then 8-byte records: table, field (index in the target's menu), slot,
mode, and a little-endian int32 value; mode 2 (int8 value) is used when the
value fits, else mode 1.

The sound segment (sound_segment() in segment_edits.hpp; the checker target
prints it with COEXEC_FUZZ_VERBOSE=1):
  CPU 0 Running (process 0, thread 3)   CPU 3 Lent (process 0, thread 2)
  CPU 1 Idle (process 1, thread 6)      CPU 4 Running (process 1, thread 5)
  CPU 2 Sleeping (process 2, thread 8)  CPU 5 Free
  cpu_count 6, numa_count 2, unheld_cpus 4, wakeable_cpus 3
  process slots 0 alpha, 1 beta, 2 gamma, 4 eps Alive; 3 delta left
  alive list 0 1 2 4 (alive[4] is 4, left over); procs_used 5
  pool lists: 0: 1 -> 0; 1: 4; 2: 7; 4: empty
  free list 10 -> 11 -> 9; thread 12 Waiting (1), 13 Blocked (0);
  threads_used 14; process 0 has 5 threads, 1 has 4, 2 has 2

Run from anywhere: python3 tests/fuzz/make_segment_seeds.py
"""
import os
import struct

HERE = os.path.dirname(os.path.abspath(__file__))

TABLES = {"header": 0, "cpu": 1, "proc": 2, "thread": 3}

# Every field of segment_edits.hpp's Field enum, by table, in enum order:
# the segment_reader menu.
ALL_FIELDS = {
    "header": ["magic", "abi_version", "header_size", "total_size", "max_cpus", "max_procs",
               "max_threads", "max_numa", "cpu_count", "numa_count", "quota_cpus",
               "cpu_origin", "quantum_ns", "preempt_after_ns", "governor_policy",
               "governor_spins", "isolation", "created_ns", "threads_used", "procs_used",
               "thread_free_head", "alive_count", "alive", "unheld_cpus", "wakeable_cpus",
               "recoveries", "trace_recorders"],
    "cpu": ["system_id", "numa", "core", "state", "owner_proc", "owner_thread", "since_ns",
            "turn_proc", "stint_proc", "stint_start_ns", "counted_proc"],
    "proc": ["state", "pid", "start_time", "name", "pool_head", "pool_size", "threads",
             "receiver", "running_cpus", "ready_total", "cpu_time_ns", "label_time_openmp",
             "label_time_tbb", "label_time_pocl", "label_time_other", "handoffs",
             "preemptions"],
    "thread": ["state", "grant", "proc", "tid", "bound_cpu", "next", "label", "label_class"],
}

# segment_checker_fuzz.cpp's kMenu.
CHECKER_FIELDS = {
    "header": ["magic", "abi_version", "header_size", "total_size", "max_cpus", "max_procs",
               "max_threads", "max_numa", "cpu_count", "numa_count", "threads_used",
               "procs_used", "thread_free_head", "alive_count", "alive", "unheld_cpus",
               "wakeable_cpus"],
    "cpu": ["state", "numa", "owner_proc", "owner_thread", "turn_proc", "stint_proc",
            "counted_proc"],
    "proc": ["state", "pool_head", "pool_size", "threads", "running_cpus"],
    "thread": ["state", "grant", "proc", "bound_cpu", "next"],
}

ABI_VERSION = 13  # shm/layout.hpp kAbiVersion

# name -> edits (table, field, slot, value); slot is ignored for the
# header's single fields.
DAMAGE = {
    "sound": [],
    "sound_written_back": [("cpu", "owner_thread", 0, 3), ("thread", "next", 1, 0),
                           ("header", "alive_count", 0, 4)],
    "cpu_held_by_a_freed_thread": [("thread", "state", 3, 0)],
    "cpu_held_by_a_pool_thread": [("thread", "state", 3, 1), ("thread", "next", 3, 1),
                                  ("proc", "pool_head", 0, 3), ("proc", "pool_size", 0, 3)],
    "cpu_owner_proc_disagrees_with_its_thread": [("cpu", "owner_proc", 0, 1)],
    "cpu_held_by_a_process_that_left": [("proc", "state", 0, 0)],
    "held_cpu_with_out_of_range_owner": [("cpu", "owner_thread", 1, 8192),
                                         ("cpu", "owner_proc", 0, -7)],
    "free_cpu_with_an_owner": [("cpu", "state", 1, 0)],
    "thread_on_two_cpus": [("cpu", "owner_thread", 1, 3), ("cpu", "owner_proc", 1, 0)],
    # Sound as a whole: a lock-free hand-off read halfway.
    "thread_read_on_two_running_cpus": [
        ("cpu", "owner_thread", 1, 3), ("cpu", "owner_proc", 1, 0), ("cpu", "state", 1, 1),
        ("header", "unheld_cpus", 0, 3), ("cpu", "counted_proc", 1, 0),
        ("proc", "running_cpus", 0, 2)],
    "running_cpus_of_a_process_miscounted": [("proc", "running_cpus", 0, 2)],
    "cpu_counted_for_a_process_that_does_not_run_it": [("cpu", "counted_proc", 1, 1)],
    "cycle_in_a_pool_list": [("thread", "next", 0, 1)],
    "cycle_in_the_free_list": [("thread", "next", 11, 10)],
    "slot_on_two_lists": [("thread", "next", 4, 1)],
    "used_slot_on_the_free_list": [("thread", "next", 3, 10),
                                   ("header", "thread_free_head", 0, 3)],
    "free_list_link_out_of_range": [("header", "thread_free_head", 0, 100000)],
    "reference_above_the_high_water_mark": [("proc", "pool_head", 0, 14)],
    "freed_slot_off_the_free_list": [("header", "thread_free_head", 0, 11)],
    "pool_thread_off_its_pool_list": [("proc", "pool_head", 0, 0), ("proc", "pool_size", 0, 1)],
    "running_thread_on_a_pool_list": [("thread", "next", 3, 1), ("proc", "pool_head", 0, 3),
                                      ("proc", "pool_size", 0, 3)],
    "pool_thread_of_another_process": [("thread", "proc", 1, 1)],
    "wrong_counters": [("header", "unheld_cpus", 0, 5), ("header", "wakeable_cpus", 0, 1),
                       ("proc", "threads", 1, 7), ("proc", "pool_size", 0, 3)],
    "process_missing_from_the_alive_list": [("header", "alive_count", 0, 3)],
    "alive_list_entries_bad_or_twice": [("header", "alive", 1, 0), ("header", "alive", 2, 512)],
    "thread_of_a_dead_process": [("thread", "proc", 4, 3)],
    "bad_indices": [("cpu", "turn_proc", 0, 512), ("cpu", "stint_proc", 1, -3),
                    ("cpu", "numa", 1, 2), ("thread", "grant", 3, 6),
                    ("thread", "bound_cpu", 6, -2)],
    "bad_states": [("cpu", "state", 1, 9), ("thread", "state", 4, 77), ("proc", "state", 1, 3)],
    "bad_header": [("header", "magic", 0, 1), ("header", "abi_version", 0, ABI_VERSION + 1),
                   ("header", "max_threads", 0, 4), ("header", "cpu_count", 0, 257),
                   ("header", "numa_count", 0, 0), ("header", "alive_count", 0, -1)],
    "bad_header_cpu_count_zero": [("header", "cpu_count", 0, 0)],
    "many_violations_are_capped": [("header", "threads_used", 0, 8192)],
    "a_corrupt_segment_is_refused_at_init": [("proc", "threads", 0, 7)],
}

# Only for the reader: fields it shows whose range it does not keep today
# (segment_reader_fuzz.cpp kKnownGaps).
READER_GAPS = {
    "gap_owner_of_an_unused_process_slot": [("cpu", "owner_proc", 0, 6)],
    "gap_cpu_fields_raw": [("cpu", "numa", 1, 7), ("cpu", "system_id", 2, -1),
                           ("cpu", "core", 3, -1), ("cpu", "state", 4, 9)],
    "gap_process_fields_raw": [("proc", "pid", 1, 0), ("proc", "ready_total", 1, -1),
                               ("proc", "threads", 2, -1)],
    "gap_share_over_100": [("proc", "cpu_time_ns", 0, -1), ("proc", "label_time_openmp", 1, -1)],
    "gap_header_counts_raw": [("header", "unheld_cpus", 0, -1),
                              ("header", "trace_recorders", 0, 1000)],
}


def record(fields, table, field, slot, value):
    mode = 2 if -128 <= value <= 127 else 1
    return struct.pack("<BBBBi", TABLES[table], fields[table].index(field), slot, mode, value)


def write(target, fields, prefix, seeds):
    folder = os.path.join(HERE, "corpus", target)
    os.makedirs(folder, exist_ok=True)
    for name, edits in seeds.items():
        data = b"E" + b"".join(record(fields, *e) for e in edits)
        with open(os.path.join(folder, prefix + name), "wb") as f:
            f.write(data)


write("segment_checker", CHECKER_FIELDS, "damage_", DAMAGE)
write("segment_reader", ALL_FIELDS, "damage_", DAMAGE)
write("segment_reader", ALL_FIELDS, "", READER_GAPS)
