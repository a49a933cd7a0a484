/* GPU work from CUPTI's records in the outputs, from a capture written by hand: kernels and
 * copies on one row per (device, stream), API records on the rows of the threads that
 * made them (not on the delivering thread's), flow arrows launch -> work by correlation
 * id (an API record after its work too, one start per id), self time of the calling
 * thread untouched by the late API records, and the copies table. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "capture_fixture.h"
#include "json_check.h"
#include "formats/model/outputs.h"

#define PID 10
#define MAIN 10     /* the program's thread */
#define DELIVER 12  /* CUPTI's thread: every record below is in its ring */
#define CAT_API 16
#define CAT_KERNEL 17
#define CAT_MEMCPY 18
#define GPU_ROW(dev, stream) (0x40000000u | (dev) << 21 | (stream))

static struct prof_event api(uint64_t t0, uint64_t t1, uint32_t name, uint32_t corr)
{
	struct prof_event e = fx_range(t0, t1, name, CAT_API, 255);
	e.flags = PROF_EVF_NS | PROF_EVF_TID;
	e.a = corr;
	e.c = MAIN;
	return e;
}

static struct prof_event gpu(uint64_t t0, uint64_t t1, uint32_t name, uint8_t cat,
			     uint32_t corr, uint64_t b, uint32_t stream)
{
	struct prof_event e = fx_range(t0, t1, name, cat, 0);
	e.flags = PROF_EVF_NS | PROF_EVF_GPU;
	e.a = corr;
	e.b = b;
	e.c = PROF_GPU_WHERE(1, 3, stream);
	return e;
}

static void write_gpu(struct fx *f)
{
	struct prof_event own[2], cupti[7];

	fx_open(f, "gpu");
	fx_text(f, CAP_SESSION, "command=train\nstart_ns=1000000\n");
	fx_process(f, PID, 0, "train", 5);
	fx_thread(f, PID, MAIN, "main");
	fx_thread(f, PID, DELIVER, "cupti");
	fx_name(f, PID, 1, "step");
	fx_name(f, PID, 2, "inner");
	fx_name(f, PID, 3, "cudaLaunchKernel");
	fx_name(f, PID, 4, "cuLaunchKernel");
	fx_name(f, PID, 5, "_Z6kernelv");
	fx_name(f, PID, 6, "Memcpy HtoD");
	fx_name(f, PID, 7, "cudaMemcpyAsync");
	fx_string(f, CAP_CATEGORY, PID, CAT_API, "cuda_api", 8);
	fx_string(f, CAP_CATEGORY, PID, CAT_KERNEL, "cuda_kernel", 11);
	fx_string(f, CAP_CATEGORY, PID, CAT_MEMCPY, "cuda_memcpy", 11);
	/* the program's own range [1.000, 1.100] ms with a child of 20 us: self 80 us */
	own[0] = fx_range(1010000, 1030000, 2, PROF_CAT_USER, 1);
	own[1] = fx_range(1000000, 1100000, 1, PROF_CAT_USER, 0);
	fx_events(f, PID, MAIN, own, 1);
	/* CUPTI's records arrive while the range is open, on the other thread */
	cupti[0] = api(1040000, 1042000, 3, 5);        /* runtime launch */
	cupti[1] = api(1040500, 1041500, 4, 5);        /* the driver call inside: same id */
	cupti[2] = gpu(1050000, 1060000, 5, CAT_KERNEL, 5, (uint64_t)256 << 32 | 4, 7);
	cupti[3] = gpu(1070000, 1080000, 6, CAT_MEMCPY, 6, 1000000, 9);
	cupti[4] = api(1043000, 1044000, 7, 6);        /* after its copy in the buffer */
	cupti[5] = gpu(1081000, 1082000, 6, CAT_MEMCPY, 8, 1000000, 9); /* no launch seen */
	cupti[6] = fx_ev(1090000, 1090000, 0, PROF_CAT_LOST, PROF_EV_LOST, 0);
	cupti[6].flags = PROF_EVF_NS;
	cupti[6].a = 3; /* CUPTI's dropped records */
	fx_events(f, PID, DELIVER, cupti, 7);
	fx_events(f, PID, MAIN, own + 1, 1);
	fx_text(f, CAP_SESSION_END, "end_ns=1200000\n");
	fx_close(f);
}

static char *export_json(const char *capture, char *json, size_t len)
{
	struct output_summary sum;
	char err[256];

	snprintf(json, len, "%s.json", capture);
	assert_int_equal(chrome_export(capture, json, 0, &sum, err, sizeof(err)), 0);
	char *s = fx_slurp(json, NULL);
	assert_non_null(s);
	assert_true(json_valid(s, strlen(s)));
	return s;
}

static void test_trace(void **state)
{
	struct fx f;
	char json[96], want[512];

	(void)state;
	write_gpu(&f);
	char *s = export_json(f.path, json, sizeof(json));
	/* rows: named per (device, stream), the delivering thread's stays as it was */
	snprintf(want, sizeof(want), "{\"ph\":\"M\",\"name\":\"thread_name\",\"pid\":%d,\"tid\":%u,"
		 "\"args\":{\"name\":\"GPU 1, stream 7\"}}", PID, GPU_ROW(1, 7));
	assert_non_null(strstr(s, want));
	snprintf(want, sizeof(want), "\"tid\":%u,\"args\":{\"name\":\"GPU 1, stream 9\"}}",
		 GPU_ROW(1, 9));
	assert_non_null(strstr(s, want));
	/* the kernel, demangled, with its place and launch shape */
	snprintf(want, sizeof(want), "{\"ph\":\"X\",\"name\":\"kernel()\",\"cat\":\"cuda_kernel\","
		 "\"pid\":%d,\"tid\":%u,\"ts\":50.000,\"dur\":10.000,\"args\":{\"device\":1,"
		 "\"context\":3,\"stream\":7,\"correlation\":5,\"grid\":4,\"block\":256}}", PID,
		 GPU_ROW(1, 7));
	assert_non_null(strstr(s, want));
	snprintf(want, sizeof(want), "\"name\":\"Memcpy HtoD\",\"cat\":\"cuda_memcpy\",\"pid\":%d,"
		 "\"tid\":%u,\"ts\":70.000,\"dur\":10.000,\"args\":{\"device\":1,\"context\":3,"
		 "\"stream\":9,\"correlation\":6,\"bytes\":1000000}}", PID, GPU_ROW(1, 9));
	assert_non_null(strstr(s, want));
	/* API records on the calling thread */
	snprintf(want, sizeof(want), "{\"ph\":\"X\",\"name\":\"cudaLaunchKernel\",\"cat\":\"cuda_api\","
		 "\"pid\":%d,\"tid\":%d,\"ts\":40.000,\"dur\":2.000,\"args\":{\"correlation\":5,"
		 "\"status\":0}}", PID, MAIN);
	assert_non_null(strstr(s, want));
	assert_int_equal(fx_count(s, "\"cat\":\"cuda_api\",\"pid\":10,\"tid\":12"), 0);
	/* flows: one start per id (the runtime call, first), an end on the work; the copy
	 * whose launch came later in the buffer gets one too, the unlaunched copy none */
	uint64_t id5 = (uint64_t)0 << 32 | 5, id6 = 6;
	snprintf(want, sizeof(want), "{\"ph\":\"s\",\"id\":%llu,\"name\":\"launch\",\"cat\":"
		 "\"cuda_flow\",\"pid\":%d,\"tid\":%d,\"ts\":40.000}", (unsigned long long)id5, PID,
		 MAIN);
	assert_non_null(strstr(s, want));
	snprintf(want, sizeof(want), "{\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,\"name\":\"launch\","
		 "\"cat\":\"cuda_flow\",\"pid\":%d,\"tid\":%u,\"ts\":50.000}",
		 (unsigned long long)id5, PID, GPU_ROW(1, 7));
	assert_non_null(strstr(s, want));
	snprintf(want, sizeof(want), "{\"ph\":\"f\",\"bp\":\"e\",\"id\":%llu,", (unsigned long long)id6);
	assert_non_null(strstr(s, want));
	snprintf(want, sizeof(want), "{\"ph\":\"s\",\"id\":%llu,", (unsigned long long)id6);
	assert_non_null(strstr(s, want));
	assert_int_equal(fx_count(s, "{\"ph\":\"s\""), 2);
	assert_int_equal(fx_count(s, "{\"ph\":\"f\""), 2);
	assert_non_null(strstr(s, "\"json_flows\":4,"));
	assert_non_null(strstr(s, "\"lost_events\":3,"));
	free(s);
	unlink(json);
	unlink(f.path);
}

static char *report(const char *path, enum table_format fmt, const char *category)
{
	struct table_options o = {SORT_TOTAL, 0, category, fmt, 0};
	struct output_summary sum;
	char *buf = NULL, err[256];
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	assert_non_null(f);
	assert_int_equal(tables_write(path, f, &o, &sum, err, sizeof(err)), 0);
	fclose(f);
	return buf;
}

static void test_tables(void **state)
{
	struct fx f;
	char want[128];

	(void)state;
	write_gpu(&f);
	char *s = report(f.path, FORMAT_JSON, NULL);
	assert_true(json_valid(s, strlen(s)));
	/* the late API records leave the range's self time alone: 100 - 20 us */
	assert_non_null(strstr(s, "{\"category\":\"user\",\"name\":\"step\",\"count\":1,"
				  "\"total_ns\":100000,\"self_ns\":80000,"));
	assert_non_null(strstr(s, "{\"category\":\"cuda_kernel\",\"name\":\"kernel()\",\"count\":1,"
				  "\"total_ns\":10000,\"self_ns\":10000,"));
	assert_non_null(strstr(s, "\"copies\":[{\"kind\":\"Memcpy HtoD\",\"category\":"
				  "\"cuda_memcpy\",\"count\":2,\"bytes\":2000000,\"total_ns\":11000,"
				  "\"bandwidth_gbps\":181.818}]"));
	snprintf(want, sizeof(want), "{\"tid\":%u,\"name\":\"GPU 1, stream 7\"}", GPU_ROW(1, 7));
	assert_non_null(strstr(s, want));
	free(s);
	s = report(f.path, FORMAT_TEXT, NULL);
	assert_non_null(strstr(s, "\nGPU copies and sets\nKind                   Count          "
				  "Bytes      Total       GB/s\nMemcpy HtoD                2       "
				  "1.91 MiB    11.00us     181.82\n"));
	free(s);
	/* the table goes with its categories */
	s = report(f.path, FORMAT_TEXT, "cuda_kernel");
	assert_null(strstr(s, "GPU copies"));
	free(s);
	s = report(f.path, FORMAT_JSON, "cuda_memcpy");
	assert_non_null(strstr(s, "\"copies\":[{\"kind\":\"Memcpy HtoD\""));
	free(s);
	unlink(f.path);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_trace),
		cmocka_unit_test(test_tables),
	};
	return cmocka_run_group_tests(tests, NULL, NULL);
}
