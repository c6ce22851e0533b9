/* A stand-in injection library that does a chosen part of what libovl_inject
 * does, to split the tracer's overhead into CUPTI's parts (bench/overhead/run.sh).
 * PROBE is a set of letters, each one step (none: the library loads and does nothing):
 *   s  cuptiSubscribe with an empty callback
 *   r  + the whole runtime API domain
 *   d  + the whole driver API domain
 *   D  + only the driver callbacks of launches, copies, memsets, events and syncs
 *   a  the six activity kinds libovl_inject enables
 *   k  CONCURRENT_KERNEL and MEMCPY only
 *   f  + cuptiActivityFlushPeriod(100): CUPTI's worker hands back full buffers every 100 ms
 *   U  at exit, after the flush: the activity kinds and callback domains disabled
 *   F  at exit, after the flush: cuptiFinalize
 *   u  managed memory's migration counters (HTOD, DTOH), enabled at the first
 *      runtime call's exit as libovl_inject does (needs s and r); records dropped
 * PROBE_LOG names a file that gets one line per run: the set-up's and the
 * final flush's times in microseconds. */
#include <cupti.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now_us(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return (double)t.tv_sec * 1e6 + (double)t.tv_nsec / 1e3;
}

static const char* steps = "";
static int migrations_on;

static void enable_migrations(void) {
  CUpti_ActivityUnifiedMemoryCounterConfig config[2];
  memset(config, 0, sizeof config);
  config[0].kind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_HTOD;
  config[1].kind = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_KIND_BYTES_TRANSFER_DTOH;
  for (int i = 0; i < 2; ++i) {
    config[i].scope = CUPTI_ACTIVITY_UNIFIED_MEMORY_COUNTER_SCOPE_PROCESS_SINGLE_DEVICE;
    config[i].enable = 1;
  }
  if (cuptiActivityConfigureUnifiedMemoryCounter(config, 2) == CUPTI_SUCCESS)
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_UNIFIED_MEMORY_COUNTER);
}

static void CUPTIAPI on_cb(void* u, CUpti_CallbackDomain d, CUpti_CallbackId id, const void* data) {
  (void)u; (void)id;
  if (migrations_on || !strchr(steps, 'u') || d != CUPTI_CB_DOMAIN_RUNTIME_API) return;
  if (((const CUpti_CallbackData*)data)->callbackSite != CUPTI_API_EXIT) return;
  migrations_on = 1;
  enable_migrations();
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

static double setup_us;
static CUpti_SubscriberHandle subscriber;

static void at_exit(void) {
  const double t0 = now_us();
  if (strchr(steps, 'a') || strchr(steps, 'k') || strchr(steps, 'u')) cuptiActivityFlushAll(CUPTI_ACTIVITY_FLAG_FLUSH_FORCED);
  const double flush_us = now_us() - t0;
  if (strchr(steps, 'U')) {
    const CUpti_ActivityKind kinds[] = {CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL, CUPTI_ACTIVITY_KIND_MEMCPY,
                                        CUPTI_ACTIVITY_KIND_MEMCPY2, CUPTI_ACTIVITY_KIND_MEMSET,
                                        CUPTI_ACTIVITY_KIND_MARKER, CUPTI_ACTIVITY_KIND_SYNCHRONIZATION};
    for (size_t i = 0; i < sizeof kinds / sizeof kinds[0]; ++i) cuptiActivityDisable(kinds[i]);
    if (subscriber) {
      cuptiEnableDomain(0, subscriber, CUPTI_CB_DOMAIN_RUNTIME_API);
      cuptiEnableDomain(0, subscriber, CUPTI_CB_DOMAIN_DRIVER_API);
    }
  }
  if (strchr(steps, 'F')) cuptiFinalize();
  const char* path = getenv("PROBE_LOG");
  if (path == NULL) return;
  FILE* f = fopen(path, "a");
  if (f == NULL) return;
  fprintf(f, "%s setup_us %.0f flush_us %.0f\n", *steps ? steps : "-", setup_us, flush_us);
  fclose(f);
}

static const CUpti_CallbackId driver_ids[] = {
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernel_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx, CUPTI_DRIVER_TRACE_CBID_cuLaunchKernelEx_ptsz,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyAsync, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoDAsync_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoHAsync_v2, CUPTI_DRIVER_TRACE_CBID_cuMemcpyHtoD_v2,
    CUPTI_DRIVER_TRACE_CBID_cuMemcpyDtoH_v2, CUPTI_DRIVER_TRACE_CBID_cuMemsetD8Async,
    CUPTI_DRIVER_TRACE_CBID_cuMemsetD32Async, CUPTI_DRIVER_TRACE_CBID_cuEventRecord,
    CUPTI_DRIVER_TRACE_CBID_cuStreamWaitEvent, CUPTI_DRIVER_TRACE_CBID_cuStreamSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuCtxSynchronize, CUPTI_DRIVER_TRACE_CBID_cuEventSynchronize,
    CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch, CUPTI_DRIVER_TRACE_CBID_cuGraphLaunch_ptsz,
};

int InitializeInjection(void) {
  const char* p = getenv("PROBE");
  steps = p ? p : "";
  const double t0 = now_us();
  if (strchr(steps, 's')) {
    CUpti_SubscriberHandle sub;
    cuptiSubscribe(&sub, on_cb, NULL);
    subscriber = sub;
    if (strchr(steps, 'r')) cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_RUNTIME_API);
    if (strchr(steps, 'd')) cuptiEnableDomain(1, sub, CUPTI_CB_DOMAIN_DRIVER_API);
    if (strchr(steps, 'D')) {
      for (size_t i = 0; i < sizeof driver_ids / sizeof driver_ids[0]; ++i)
        cuptiEnableCallback(1, sub, CUPTI_CB_DOMAIN_DRIVER_API, driver_ids[i]);
    }
  }
  if (strchr(steps, 'a') || strchr(steps, 'k') || strchr(steps, 'u')) {
    cuptiActivityRegisterCallbacks(req, done);
    if (strchr(steps, 'f')) cuptiActivityFlushPeriod(100);
  }
  if (strchr(steps, 'a') || strchr(steps, 'k')) {
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL);
    cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY);
    if (strchr(steps, 'a')) {
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMCPY2);
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MEMSET);
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_MARKER);
      cuptiActivityEnable(CUPTI_ACTIVITY_KIND_SYNCHRONIZATION);
    }
  }
  setup_us = now_us() - t0;
  atexit(at_exit);
  return 1;
}
