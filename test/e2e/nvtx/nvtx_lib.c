/* One NVTX instance per shared object: built twice, as libnvtx_a.so (-DLIB=a
 * -DDOMAIN_NAME='"LibA"') and libnvtx_b.so, each with its own copy of the header-only
 * NVTX v3 globals, so each finds its tool on its own first call.
 *   lib_<LIB>_init()    creates the library's domain and registers "step" in it
 *   lib_<LIB>_work(n)   lib_<LIB>_work { n x <domain>:step { malloc+free } , mark }
 *                       returns what the outer push returned (0 with a tool, <0 without) */
#include <stdlib.h>

#include <nvtx3/nvToolsExt.h>

#define STR2(x) #x
#define STR(x) STR2(x)
#define CAT3(a, b, c) a##b##c
#define NAME3(a, b, c) CAT3(a, b, c)
#define FN(suffix) NAME3(lib_, LIB, suffix)

static nvtxDomainHandle_t domain;
static nvtxStringHandle_t step;

void FN(_init)(void)
{
	domain = nvtxDomainCreateA(DOMAIN_NAME);
	step = nvtxDomainRegisterStringA(domain, "step");
}

int FN(_work)(int n)
{
	int level = nvtxRangePushA("lib_" STR(LIB) "_work");
	nvtxEventAttributes_t a = { 0 };
	a.version = NVTX_VERSION;
	a.size = NVTX_EVENT_ATTRIB_STRUCT_SIZE;
	a.messageType = NVTX_MESSAGE_TYPE_REGISTERED;
	a.message.registered = step;
	for (int i = 0; i < n; i++) {
		nvtxDomainRangePushEx(domain, &a);
		void *p = malloc(4000 + 1000 * i);
		__asm__ volatile("" : : "r"(p) : "memory");
		free(p);
		nvtxDomainRangePop(domain);
	}
	nvtxMarkA("lib_" STR(LIB) "_mark");
	nvtxRangePop();
	return level;
}
