/* The one table of settings: each PROFILER_* variable, its prof_set_config key, type,
 * default, range, when it takes effect, prof record's option for it and its help. The
 * environment parser, prof_config_set and the defaults (config.c), README's settings
 * table (collector/settings_doc.c, checked by test/unit/test_settings.c) and prof
 * record's options are made or checked from these rows: a new setting is one row here
 * (and a field in struct prof_config). */
#include <stddef.h>

#include "preload/common/config.h"
#include "preload/common/schedule.h"
#include "preload/common/span.h"

#define FIELD(f) .off = offsetof(struct prof_config, f), \
		 .size = sizeof(((struct prof_config *)0)->f)

const struct prof_setting prof_settings[] = {
	{.name = "autostart", .env = "PROFILER_AUTOSTART", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_LOAD, FIELD(autostart), .def = "0",
	 .help = "start recording at load"},
	{.name = "output", .env = "PROFILER_OUTPUT", .type = PROF_SETTING_STRING,
	 .when = PROF_WHEN_START, FIELD(output), .def = "libprof", .flags = PROF_SETTING_NONEMPTY,
	 .why = "empty output name", .range_why = "output name too long",
	 .record_flag = "--output", .record_short = 'o', .record_arg = "PREFIX",
	 .record_needs = "an output prefix",
	 .record_help = "output prefix (default: libprof; %p pid, %h host,\n"
			"%t start time, %r rank). When a file of PREFIX\n"
			"exists, PREFIX-2, PREFIX-3, ... is used (the summary\n"
			"line names the files)",
	 .help = "output prefix; `%p` pid, `%h` host, `%t` start time, `%r` rank of the "
		 "process that starts the session (RANK, OMPI_COMM_WORLD_RANK, PMI_RANK, "
		 "PMIX_RANK, SLURM_PROCID: the innermost launcher's; 0 when none: a launcher's "
		 "session holds every rank it starts, each labelled). A taken prefix becomes "
		 "`PREFIX-2`, "
		 "`PREFIX-3`, ...; missing directories in it are created"},
	{.name = "overwrite", .env = "PROFILER_OVERWRITE", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_START, FIELD(overwrite), .def = "0",
	 .record_flag = "--force-overwrite", .record_value = "1",
	 .record_help = "replace existing files at PREFIX's names instead",
	 .help = "replace regular files at the output names instead"},
	{.name = "filename", .env = "PROFILER_FILENAME", .type = PROF_SETTING_STRING,
	 .when = PROF_WHEN_START, .sets = "output",
	 .flags = PROF_SETTING_NONEMPTY | PROF_SETTING_STRIP_JSON,
	 .help = "MXNet's `filename`: `out.json` means output prefix `out`"},
	{.name = "quiet", .env = "PROFILER_QUIET", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_START, FIELD(quiet), .def = "0",
	 .record_flag = "--quiet", .record_short = 'q', .record_value = "1",
	 .help = "no summary line on stderr"},
	{.name = "ring_size", .env = "PROFILER_RING_SIZE", .type = PROF_SETTING_SIZE,
	 .when = PROF_WHEN_START, FIELD(ring_bytes), .def = "16M",
	 .min = PROF_MIN_RING_BYTES, .max = PROF_MAX_RING_BYTES,
	 .why = "not a size (e.g. 4M, 65536)", .range_why = "ring size must be 4K..1G",
	 .record_flag = "--ring-size", .record_arg = "SIZE",
	 .record_needs = "a size (e.g. 64K, 16M)",
	 .record_help = "per-thread ring (default 16M; e.g. 64K, 64M)",
	 .help = "per-thread ring, rounded down to a power of two of 48-byte events; "
		 "allocated as the thread writes"},
	{.name = "block", .env = "PROFILER_BLOCK", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_START, FIELD(block), .def = "0",
	 .record_flag = "--block", .record_value = "1",
	 .record_help = "writers wait for room instead of dropping events",
	 .help = "a full ring makes the writer wait instead of dropping (nothing lost while "
		 "the collector runs; a dead or stopped collector is noticed within "
		 "milliseconds and writers drop and count again); the program also waits "
		 "while the live tables fall half a second behind, so the outputs are ready "
		 "within about a second of its end"},
	{.name = "profile_all", .env = "PROFILER_PROFILE_ALL", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_ANY, .sets = "profile_memory,profile_api", .shown_default = "1",
	 .help = "MXNet's `profile_all`: both `profile_memory` and `profile_api`"},
	{.name = "profile_memory", .env = "PROFILER_PROFILE_MEMORY", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_ANY, FIELD(profile_memory), .def = "1",
	 .record_flag = "--no-memory", .record_value = "0",
	 .record_help = "do not trace the allocator",
	 .help = "record the allocator"},
	{.name = "profile_api", .env = "PROFILER_PROFILE_API", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_ANY, FIELD(profile_api), .def = "1",
	 .help = "record API calls (CUDA, frameworks)"},
	{.name = "aggregate_stats", .env = "PROFILER_AGGREGATE_STATS", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_ANY, FIELD(aggregate_stats), .def = "1",
	 .help = "write the tables (`libprof.txt`)"},
	{.name = "continuous_dump", .env = "PROFILER_CONTINUOUS_DUMP", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_ANY, FIELD(continuous_dump), .def = "0",
	 .help = "rewrite the outputs every `dump_period`"},
	{.name = "dump_period", .env = "PROFILER_DUMP_PERIOD", .type = PROF_SETTING_SECONDS,
	 .when = PROF_WHEN_ANY, FIELD(dump_period_ms), .def = "1.0", .max = 86400,
	 .why = "not a period in seconds (e.g. 0.5)",
	 .help = "seconds between the rewrites of `continuous_dump`"},
	{.name = "delay", .env = "PROFILER_DELAY", .type = PROF_SETTING_SECONDS,
	 .when = PROF_WHEN_START, FIELD(delay_ms), .def = "0", .max = 86400 * 40,
	 .flags = PROF_SETTING_ZERO_OK, .why = "not a time in seconds (e.g. 30, 0.5)",
	 .record_flag = "--delay", .record_arg = "SECONDS", .record_needs = "a time in seconds",
	 .record_help = "leave out the first SECONDS of the session (like nsys --delay)",
	 .help = "seconds from the session's start before events are kept (nsys' `--delay`); "
		 "the tables say the window and how many events it left out"},
	{.name = "duration", .env = "PROFILER_DURATION", .type = PROF_SETTING_SECONDS,
	 .when = PROF_WHEN_START, FIELD(duration_ms), .def = "0", .max = 86400 * 40,
	 .flags = PROF_SETTING_ZERO_OK, .why = "not a time in seconds (e.g. 60, 0.5)",
	 .record_flag = "--duration", .record_arg = "SECONDS",
	 .record_needs = "a time in seconds",
	 .record_help = "keep SECONDS of events after the delay, none after (0: all)",
	 .help = "seconds of events kept after `delay`, none after (0: to the end; nsys' "
		 "`--duration`)"},
	{.name = "schedule", .env = "PROFILER_SCHEDULE", .type = PROF_SETTING_STRING,
	 .when = PROF_WHEN_START, FIELD(schedule), .def = "", .check = prof_schedule_check,
	 .range_why = "longer than 95 bytes",
	 .record_flag = "--schedule", .record_arg = "SPEC",
	 .record_needs = "wait=N,warmup=N,active=N,repeat=N,skip_first=N",
	 .record_help = "record only the active steps (torch.profiler.schedule's\n"
			"wait, warmup, active, repeat, skip_first) of prof_step()",
	 .help = "`wait=N,warmup=N,active=N,repeat=N,skip_first=N`: torch.profiler.schedule "
		 "over the steps of `prof_step()` / `libprof.step()` (else PyTorch's "
		 "`optimizer.step()` calls); only the active steps are recorded (warmup ones "
		 "are not: nothing to warm up)"},
	{.name = "rotate", .env = "PROFILER_ROTATE", .type = PROF_SETTING_STRING,
	 .when = PROF_WHEN_START, FIELD(rotate), .def = "", .check = prof_span_check,
	 .range_why = "longer than 63 bytes",
	 .record_flag = "--rotate", .record_arg = "SPAN",
	 .record_needs = "a time (60s, 5min) or a size (500M)",
	 .record_help = "a new capture part every SPAN of time or size:\n"
			"PREFIX.prof is then a directory of parts",
	 .help = "a new capture part every `60s`, `5min`, `500M`, ... (perf's "
		 "`--switch-output`): `PREFIX.prof` is then a directory of parts, each "
		 "readable alone; `prof report PREFIX.prof` reads them all"},
	{.name = "flight", .env = "PROFILER_FLIGHT", .type = PROF_SETTING_STRING,
	 .when = PROF_WHEN_START, FIELD(flight), .def = "", .check = prof_span_check,
	 .range_why = "longer than 63 bytes",
	 .record_flag = "--flight", .record_arg = "SPAN",
	 .record_needs = "a time (30s, 5min) or a size (200M)",
	 .record_help = "flight recorder: keep only the last SPAN of events\n"
			"(time or capture size); outputs at the end, or\n"
			"at once on SIGUSR2 to prof record",
	 .help = "flight recorder: only the last `30s` (or `200M` of capture) is kept, in parts "
		 "of a quarter of it under `PREFIX.prof/`; the outputs are made from it at the "
		 "end (exit, crash, kill) or on SIGUSR2 to the collector"},
	{.name = "trace_max_events", .env = "PROFILER_TRACE_MAX_EVENTS", .type = PROF_SETTING_UINT,
	 .when = PROF_WHEN_START, FIELD(max_json_events), .def = "4000000", .min = 1,
	 .max = UINT64_MAX, .why = "not a positive count",
	 .record_flag = "--max-json-events", .record_arg = "N",
	 .record_needs = "a number of events",
	 .record_help = "cap on events in the Chrome trace (default 4000000)",
	 .help = "cap on events in the JSON (see below)"},
	{.name = "trace_alloc", .env = "PROFILER_TRACE_ALLOC", .type = PROF_SETTING_ENUM,
	 .when = PROF_WHEN_START, FIELD(trace_alloc), .def = "auto", .values = "auto,all",
	 .why = "use auto or all",
	 .help = "allocator calls in the trace: `auto`, those of 1 MiB or more (and their "
		 "releases), failed ones and those of 20 us or more, the rest as counter tracks "
		 "(live heap bytes, allocator calls/s); `all`: every one. The tables and the "
		 "capture have them all"},
	{.name = "alloc_timing", .env = "PROFILER_ALLOC_TIMING", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_START, FIELD(alloc_timing), .def = "0",
	 .record_flag = "--alloc-timing", .record_value = "1",
	 .record_help = "give every allocator call a duration",
	 .help = "allocator calls get a duration (two clock reads each); by default each "
		 "carries one time (realloc two), which is all the memory tables and the trace's "
		 "memory tracks need, and costs about half"},
	{.name = "clock", .env = "PROFILER_CLOCK", .type = PROF_SETTING_ENUM,
	 .when = PROF_WHEN_START, FIELD(clock), .values = "tsc,mono", .flags = PROF_SETTING_TEXT,
	 .shown_default = "auto", .why = "clock must be tsc or mono",
	 .help = "the TSC (where invariant) or CLOCK_MONOTONIC"},
	{.name = "trace", .env = "PROFILER_TRACE", .type = PROF_SETTING_STRING,
	 .when = PROF_WHEN_START, FIELD(trace), .def = "",
	 .range_why = "patterns longer than 4095 bytes",
	 .help = "functions to trace by name (above)"},
	{.name = "framework", .env = "PROFILER_FRAMEWORK", .type = PROF_SETTING_ENUM,
	 .when = PROF_WHEN_START, FIELD(framework),
	 .def = "detect", .values = "detect,mxnet,torch,tensorflow,onnxruntime,mpi,auto,none",
	 .flags = PROF_SETTING_TEXT,
	 .why = "use detect, mxnet, torch, tensorflow, onnxruntime, mpi, auto or none",
	 .help = "`detect`: every framework the program loads, its preset in its own "
		 "libraries; a name: that preset, `auto`: every preset, in every library; "
		 "`none`: no preset (above)"},
	{.name = "follow", .env = "PROFILER_FOLLOW", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_START, FIELD(follow), .def = "0",
	 .help = "record only while the framework's profiler runs"},
	{.name = "mxnet_bulk", .env = "PROFILER_MXNET_BULK", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_LOAD, FIELD(mxnet_bulk), .def = "0",
	 .help = "0: MXNet runs every operator on its own, as while its own profiler runs "
		 "(bulk execution off), so a hybridized Gluon network's layers are operators "
		 "rather than `ImperativeBulk` (set in a Python interpreter, before MXNet's "
		 "import); 1: MXNet's bulk segments kept (faster, the layers hidden)"},
	{.name = "inductor_kernels", .env = "PROFILER_INDUCTOR_KERNELS", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_LOAD, FIELD(inductor_kernels), .def = "1",
	 .help = "1: torch.compile's generated CPU kernels are rows by name (`graph_0_cpp_fused_"
		 "relu_0`): libprof sets TORCHINDUCTOR_CPP_ENABLE_KERNEL_PROFILE=1 in a Python "
		 "interpreter, so each kernel makes a RecordFunction; 0: kernels run unnamed "
		 "inside their graph"},
	{.name = "record_shapes", .env = "PROFILER_RECORD_SHAPES", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_START, FIELD(record_shapes), .def = "0",
	 .help = "PyTorch operators' input shapes, as torch.profiler's `record_shapes` "
		 "(`prof report --group-by shape`); costs a RecordFunction per operator"},
	{.name = "stack", .env = "PROFILER_STACK", .type = PROF_SETTING_ENUM,
	 .when = PROF_WHEN_ANY, FIELD(stack_mode), .def = "off", .values = "off,alloc,all",
	 .why = "use alloc, all or off",
	 .help = "`alloc`: call stacks on allocations; `all`: also on traced calls"},
	{.name = "area_max", .env = "PROFILER_AREA_MAX", .type = PROF_SETTING_SIZE,
	 .when = PROF_WHEN_LOAD, FIELD(area_max), .def = "32G", .min = 1ull << 20,
	 .max = 1ull << 40, .why = "not a size (e.g. 64M, 1G)",
	 .range_why = "area size must be 1M..1T",
	 .help = "the most bytes of distinct names, and of distinct call stacks, one process "
		 "keeps in /dev/shm; both grow as needed up to it (names up to 4G). Events past "
		 "it keep no name or stack, and the tables count them"},
	{.name = "stack_depth", .env = "PROFILER_STACK_DEPTH", .type = PROF_SETTING_UINT,
	 .when = PROF_WHEN_ANY, FIELD(stack_depth), .def = "64", .min = 1,
	 .max = PROF_MAX_STACK_DEPTH, .why = "frames must be 1..128",
	 .help = "native frames per stack, and as many Python frames"},
	{.name = "stack_unwind", .env = "PROFILER_STACK_UNWIND", .type = PROF_SETTING_ENUM,
	 .when = PROF_WHEN_ANY, FIELD(stack_unwind), .def = "auto", .values = "auto,libunwind",
	 .why = "use auto or libunwind",
	 .help = "`auto`: stacks are walked by frame pointers through code that keeps them "
		 "(begins with `push %rbp; mov %rsp,%rbp`) and by libunwind's tables elsewhere; "
		 "`libunwind`: by libunwind's tables only. Both give the same stacks"},
	{.name = "stack_min_us", .env = "PROFILER_STACK_MIN_US", .type = PROF_SETTING_UINT,
	 .when = PROF_WHEN_ANY, FIELD(stack_min_ns), .def = "0", .max = 3600000000ull,
	 .scale = 1000, .why = "not a duration in microseconds",
	 .help = "traced calls shorter than this get no stack"},
	{.name = "cuda", .env = "PROFILER_CUDA", .type = PROF_SETTING_BOOL, .when = PROF_WHEN_ANY,
	 FIELD(no_cuda), .def = "1", .flags = PROF_SETTING_INVERT,
	 .help = "CUDA runtime and driver API calls (category `cuda_api`); 0: they pass "
		 "through"},
	{.name = "cupti", .env = "PROFILER_CUPTI", .type = PROF_SETTING_BOOL,
	 .when = PROF_WHEN_START, FIELD(cupti), .def = "1",
	 .help = "GPU kernels, copies and sets from CUPTI (0: leave CUPTI to another tool, "
		 "e.g. torch.profiler)"},
	{.name = "debug", .env = "PROFILER_DEBUG", .type = PROF_SETTING_LIST,
	 .when = PROF_WHEN_ANY, FIELD(debug), .def = "",
	 .values = "got,trace,drain,cupti,shm,alloc,stack,all",
	 .why = "use a comma list of got, trace, drain, cupti, shm, alloc, stack, all",
	 .help = "print on stderr why libprof gave up on something (`stack`: how the call "
		 "stacks were found, at exit)"},
};

const size_t prof_nsettings = sizeof prof_settings / sizeof *prof_settings;
