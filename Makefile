# The two commands of the README. Each installs what is missing, then builds.
#   make run    the main job: the simulator on the seeds' 2-stream example
#   make test   build and run the whole test suite through ctest
PRESET ?= default
OVERLAP := build/$(PRESET)/tools/overlap/overlap

.PHONY: run test build deps bench clean

run: build
	$(OVERLAP) simulate examples/seed004.yaml --format ascii,summary

test: build
	ctest --preset $(PRESET) -j 2

build: deps
	cmake --preset $(PRESET)
	cmake --build --preset $(PRESET)

deps:
	@scripts/install-deps.sh

bench: build
	build/$(PRESET)/bench/sim_throughput --benchmark_repetitions=5 --benchmark_report_aggregates_only=true

clean:
	rm -rf build
