"""
overlap's C++ core (predict and check); use the `overlap` package, not this module.
"""



class DeviceModel:
    """
    A device as the simulator sees it: copy engines, bandwidth curves, host call costs. Every time is in milliseconds.
    """

    @staticmethod
    def preset_names() -> list[str]:
        """Names of the built-in presets."""

    @staticmethod
    def preset(name: str) -> DeviceModel:
        """
        A built-in preset by name; ValueError naming the presets for an unknown one.
        """

    @staticmethod
    def load(preset_or_path: str) -> DeviceModel:
        """
        A preset name, or the path of a model JSON file (`overlap probe -o FILE`).
        """

    @staticmethod
    def from_json(text: str) -> DeviceModel:
        """
        A model from JSON text; ValueError naming a missing, negative or zero figure.
        """

    def to_json(self) -> str:
        """The model as indented JSON, readable by from_json."""

    def save(self, path: object) -> None:
        """
        Writes the model as JSON, loadable by DeviceModel.load and `--device FILE`.
        """

    def to_dict(self) -> object:
        """The model's fields as a dict (its JSON, parsed)."""

    @property
    def name(self) -> str:
        """
        The preset name or a label; simulated timelines carry it as their device.
        """

    @name.setter
    def name(self, arg: str, /) -> None: ...

    def __repr__(self) -> str: ...

class Span:
    """The run of one stream op: where, when, and what decided its start."""

    @property
    def op(self) -> int:
        """The op's index in issue order."""

    @property
    def kind(self) -> str:
        """'h2d', 'kernel', ..."""

    @property
    def direction(self) -> str | None:
        """'h2d', 'd2h' or 'd2d' for copies, else None."""

    @property
    def label(self) -> str:
        """The stage name ('H2D', 'Kernel', ...)."""

    @property
    def item(self) -> str:
        """The chunk or item name; may be empty."""

    @property
    def chunk(self) -> int:
        """The chunk index in a pipeline, -1 if none."""

    @property
    def stream(self) -> int:
        """The stream's index into Timeline.streams."""

    @property
    def engine(self) -> str:
        """
        The engine it occupied: 'h2d_copy', 'd2h_copy', 'compute', ... or 'none'.
        """

    @property
    def start(self) -> float:
        """When it started, in the timeline's time unit."""

    @property
    def end(self) -> float:
        """When it finished."""

    @property
    def duration(self) -> float:
        """end - start."""

    @property
    def bytes(self) -> int:
        """Bytes copied or set; 0 for other kinds."""

    @property
    def solo_duration(self) -> float:
        """What the op takes alone on an idle device."""

    @property
    def waited_because(self) -> str:
        """
        The constraint that set its start: 'stream_order', 'engine_busy', 'event_wait', ...
        """

    @property
    def waited_for(self) -> int | None:
        """The op it waited for, when there is one."""

    def __repr__(self) -> str: ...

class HostSpan:
    """A stretch of the issuing host thread's time."""

    @property
    def op(self) -> int:
        """The op whose call, block or work this is."""

    @property
    def activity(self) -> str:
        """'api_call', 'blocked' or 'work'."""

    @property
    def label(self) -> str:
        """e.g. 'cudaStreamSynchronize(Stream1)'."""

    @property
    def start(self) -> float:
        """When it started."""

    @property
    def end(self) -> float:
        """When it ended."""

class Timeline:
    """What ran where and when: one type for predicted and measured runs."""

    @property
    def program_name(self) -> str:
        """The program's name."""

    @property
    def device(self) -> str:
        """The device model or GPU it ran on."""

    @property
    def time_unit(self) -> str:
        """The unit of every time."""

    @property
    def sequential_time(self) -> float:
        """The same work one op at a time, no overlap."""

    @property
    def total(self) -> float:
        """The end of the last span, device or host."""

    @property
    def streams(self) -> list[str]:
        """The streams' names, indexed by Span.stream."""

    @property
    def spans(self) -> list[Span]:
        """One Span per stream op, in issue order."""

    @property
    def host_spans(self) -> list[HostSpan]:
        """The host thread's calls, blocked waits and work."""

    def records(self) -> list:
        """
        The spans as a list of dicts (stream by name, enumerations as strings): pandas.DataFrame(t.records()).
        """

    def metrics(self) -> dict:
        """
        Speedup, engine busy fractions, overlap, the bound engine and the stalls, as a dict.
        """

    def summary(self) -> str:
        """Times, speedup, engine use, the bound and the stalls, as text."""

    def ascii(self) -> str:
        """The seeds' slot-by-slot ASCII timeline."""

    def mermaid(self) -> str:
        """A Mermaid Gantt block."""

    def chrome_trace(self) -> str:
        """Chrome Trace Event JSON, for ui.perfetto.dev."""

    def to_json(self) -> str:
        """The Timeline as JSON, readable back by Timeline.from_json."""

    def to_chrome(self, path: object) -> None:
        """Writes the Chrome trace to `path` (a str or os.PathLike)."""

    def html(self) -> str:
        """A self-contained HTML page: the summary and the Gantt chart."""

    @staticmethod
    def from_json(text: str) -> Timeline:
        """A Timeline from to_json()'s text."""

    def __repr__(self) -> str: ...

class Program:
    """A stream program: streams, events and ops in host issue order."""

    @property
    def name(self) -> str:
        """The program's name, for reports."""

    @property
    def time_unit(self) -> str:
        """The unit of every duration in the program."""

    def __len__(self) -> int:
        """The number of ops."""

    @property
    def streams(self) -> list[str]:
        """The declared streams' names, indexed by stream id."""

    def to_spec(self) -> str:
        """
        The program as an explicit-form spec (YAML), readable back by simulate and check.
        """

    def __repr__(self) -> str: ...

def parse_spec(text: str, source: str) -> tuple[Program, str | None]:
    """
    Parses spec text (YAML or JSON) into (Program, the device the spec names or None). ValueError: 'source:line: field: problem'.
    """

def simulate(program: Program, model: DeviceModel) -> Timeline:
    """The predicted Timeline of `program` on `model`."""

class OpRef:
    """An op as a finding names it."""

    @property
    def id(self) -> int:
        """Its index in issue order."""

    @property
    def kind(self) -> str:
        """'kernel', 'h2d', ..."""

    @property
    def label(self) -> str:
        """Its label."""

    @property
    def stream(self) -> str | None:
        """Its stream's name; None for host calls."""

    @property
    def text(self) -> str:
        """"ops[3] kernel 'kernel2' on stream2"."""

    def __repr__(self) -> str: ...

class Finding:
    """One thing the checker found."""

    @property
    def severity(self) -> str:
        """'error' (a race), 'warning' (a trap) or 'info'."""

    @property
    def rule(self) -> str:
        """The rule: 'race', 'legacy-default-stream', 'pageable-async-copy', ..."""

    @property
    def message(self) -> str:
        """What is wrong."""

    @property
    def ops(self) -> list[OpRef]:
        """The ops involved, in issue order."""

    @property
    def streams(self) -> list[str]:
        """The streams involved."""

    @property
    def fix(self) -> str:
        """What to change."""

    @property
    def time_lost(self) -> float | None:
        """
        Traps: what it costs on the device model, in the program's time unit; None for races.
        """

    @property
    def serialized_time(self) -> float | None:
        """Copy-engine serialization: copy time spent queued behind other copies."""

    def __repr__(self) -> str: ...

class Report:
    """The findings about one program on one device model."""

    @property
    def program(self) -> str:
        """The program's name."""

    @property
    def device(self) -> str:
        """The device model the traps were priced on."""

    @property
    def time_unit(self) -> str:
        """The unit of every time in the findings."""

    @property
    def ops(self) -> int:
        """Ops checked."""

    @property
    def findings(self) -> list[Finding]:
        """Most severe first, then in issue order."""

    @property
    def races_truncated(self) -> bool:
        """More races than max_races: the rest are not listed."""

    def count(self, severity: str) -> int:
        """Findings of exactly this severity ('error', 'warning' or 'info')."""

    def fails(self, severity: str = 'warning') -> bool:
        """True when a finding is at this severity or above (the CLI's exit 1)."""

    def text(self, fail_on: str = 'warning') -> str:
        """The report as `overlap check` prints it."""

    def to_json(self, fail_on: str = 'warning') -> str:
        """The report as `overlap check --json` prints it."""

    def __len__(self) -> int: ...

    def __repr__(self) -> str: ...

def check(program: Program, model: DeviceModel, races: bool = True, traps: bool = True, max_races: int = 1000) -> Report:
    """Races and traps of `program`, traps priced on `model`."""
