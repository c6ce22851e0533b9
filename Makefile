# The two commands of the README. Each installs what is missing, then builds.
#   make run    the main job: with a GPU, a quick overlapped benchmark and its
#               timeline; without one, the simulator on the seeds' example
#   make test   build and run the whole test suite through ctest
PRESET ?= default
OVERLAP := build/$(PRESET)/tools/overlap/overlap

.PHONY: run test build deps bench package docs clean

# The main job builds only what it runs: the CLI and, with a GPU, the
# injection library `overlap trace` and `overlap audit` load (`make test`
# builds the rest). Without a GPU it runs the simulator alone, so a build
# directory it configures first leaves the CUDA layer out (a third of the
# CLI's build); `make test` turns it on, and the CPU libraries, compiled the
# same either way, are not built again. It says how long that took.
run: deps
	@set -e; start=$$(date +%s); \
	cuda=; \
	if [ ! -f build/$(PRESET)/CMakeCache.txt ] && ! nvidia-smi -L >/dev/null 2>&1; then cuda=-DOVERLAP_CUDA=OFF; fi; \
	cmake --preset $(PRESET) $$cuda >/dev/null; \
	if [ -n "$$cuda" ]; then touch build/$(PRESET)/.cuda-left-out-by-make-run; fi; \
	targets=overlap; \
	if nvidia-smi -L >/dev/null 2>&1 && ninja -C build/$(PRESET) -t targets all 2>/dev/null | grep -q '^overlap_inject:'; then \
	  targets="overlap overlap_inject"; \
	fi; \
	cmake --build --preset $(PRESET) --target $$targets; \
	echo "(built $$targets in $$(( $$(date +%s) - start )) s; make test builds the rest)"
	@if nvidia-smi -L >/dev/null 2>&1 && $(OVERLAP) bench --help >/dev/null 2>&1; then \
	  $(OVERLAP) bench --quick --timeline build/timeline.json --report build/report.html && \
	  echo "timeline of the best run: build/timeline.json (open in ui.perfetto.dev)" && \
	  echo "report: build/report.html (the sweep, and the best run measured beside its prediction)"; \
	else \
	  echo "(no CUDA device: simulating the seeds' 2-stream pipeline instead)"; \
	  $(OVERLAP) simulate examples/seed004.yaml --format ascii,summary; \
	fi

test: build
	ctest --preset $(PRESET) -j 2

build: deps
	@if [ -f build/$(PRESET)/.cuda-left-out-by-make-run ]; then \
	  cmake --preset $(PRESET) -DOVERLAP_CUDA=ON && rm build/$(PRESET)/.cuda-left-out-by-make-run; \
	else cmake --preset $(PRESET); fi
	cmake --build --preset $(PRESET)

deps:
	@scripts/install-deps.sh

# The Debian package (cmake/package.cmake): build/$(PRESET)/overlap_*_amd64.deb
package: build
	cmake --build --preset $(PRESET) --target package

# The API reference (Doxygen): build/$(PRESET)/docs/html/index.html
docs: build
	cmake --build --preset $(PRESET) --target docs

bench: build
	build/$(PRESET)/bench/sim_throughput --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
	build/$(PRESET)/bench/check_throughput --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
	build/$(PRESET)/bench/graph_schedule --benchmark_repetitions=5 --benchmark_report_aggregates_only=true
	@if nvidia-smi -L >/dev/null 2>&1 && [ -x build/$(PRESET)/bench/graph_launch_cost ]; then \
	  build/$(PRESET)/bench/graph_launch_cost --benchmark_repetitions=5 --benchmark_report_aggregates_only=true; \
	  $(OVERLAP) probe -o build/model.json && \
	  build/$(PRESET)/bench/validate --device build/model.json --json build/validate.json; \
	else echo "graph_launch_cost and validate skipped: no CUDA device"; fi

clean:
	rm -rf build
