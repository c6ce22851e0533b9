#!/usr/bin/env python3
"""Runs a Python program, unmodified, under torch.profiler and writes its
Chrome-trace JSON (Kineto's format, what TensorBoard and Holistic Trace
Analysis read), as a PyTorch user would record one.

    torch_profile.py OUT.json [--no-sync-events] -- PROGRAM.py [ARGS...]

CUDA synchronization records (stream syncs, event syncs, stream waits on
events, with the waited event's record) are turned on: without them a trace
does not say which stream waited for which, and `overlap audit --from` can
only say so. Exits with the program's status.
"""
import argparse
import runpy
import sys


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("out", help="the Chrome-trace JSON to write")
    parser.add_argument("--no-sync-events", action="store_true",
                        help="leave CUPTI's synchronization records off (PyTorch's default)")
    parser.add_argument("program", nargs=argparse.REMAINDER, help="-- PROGRAM.py [ARGS...]")
    args = parser.parse_args()
    program = args.program[1:] if args.program[:1] == ["--"] else args.program
    if not program:
        parser.error("no program given: put it and its arguments after --")

    import torch
    from torch.profiler import ProfilerActivity, profile

    config = None
    if not args.no_sync_events:
        config = torch._C._profiler._ExperimentalConfig(enable_cuda_sync_events=True)
    sys.argv = list(program)
    status = 0
    with profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA],
                 experimental_config=config) as prof:
        try:
            runpy.run_path(program[0], run_name="__main__")
        except SystemExit as e:  # the program's own exit ends the profile, not this script
            status = e.code if isinstance(e.code, int) else (0 if e.code is None else 1)
        torch.cuda.synchronize()
    prof.export_chrome_trace(args.out)
    return status


if __name__ == "__main__":
    sys.exit(main())
