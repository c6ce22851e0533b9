/* A stand-in injection library that does a chosen part of what libovl_inject
 * does, to split the tracer's overhead into CUPTI's parts (bench/overhead/run.sh).
 * PROBE_MODE: 0 nothing; 1 subscribe + runtime and driver callback domains
 * (empty callback); 2 = 1 + the six activity kinds libovl_inject enables;
 * 3 = 2 without SYNCHRONIZATION; 4 = 1 + CONCURRENT_KERNEL and MEMCPY only;
 * 5 = activity kinds of 2 without callbacks. */
#include <cupti.h>
#include <stdlib.h>
#include <stdint.h>

static int mode;
static void CUPTIAPI on_cb(void* u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void* data) {
  (void)u; (void)d; (void)id; (void)data;
}
static void CUPTIAPI req(uint8_t** b, size_t* s, size_t* m) {
  *s = 8u << 20; *b = aligned_alloc(8, *s); *m = 0;
}
static volatile uint64_t sink;
static void CUPTIAPI done(CUcontext c, uint32_t st, uint8_t* b, size_t s, size_t v) {
  (void)c; (void)st; (void)s;
  CUpti_Activity* r = NULL;
  while (cuptiActivityGetNextRecord(b, v, &r) == CUPTI_SUCCESS) sink += r->kind;
  free(b);
}
static void at_exit(void) { cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED); }

int InitializeInjection(void) {
  const char* m = getenv("PROBE_MODE");
  mode = m ? atoi(m) : 0;
  if (mode == 0) return 1;
  if (mode != 5) {
    CUpti_SubscriberHandle sub;
    cuptiSubscribe(&sub, on_cb, NULL);
    cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
  }
  if (mode == 1) return 1;
  cuptiActivityRegisterCallbacks(req, done);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
  cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
  if (mode != 4) {
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
    if (mode != 3) cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
  }
  atexit(at_exit);
  return 1;
}
