"""The package's own exception types."""

from __future__ import annotations


class PipelineError(RuntimeError):
    """A Pipeline run failed at a chunk; the pipeline drained and freed what it held.

    Attributes:
        chunk: the index of the chunk whose stage or copy failed.
        earlier_chunks_complete: True when the outputs of chunks 0..chunk-1
            were written in full before the failure.

    When the stage raised, the stage's exception is chained as ``__cause__``.
    """

    def __init__(self, message: str, chunk: int, earlier_chunks_complete: bool) -> None:
        super().__init__(message)
        self.chunk = chunk
        self.earlier_chunks_complete = earlier_chunks_complete

    def __reduce__(self):  # picklable, as exceptions crossing processes must be
        return (type(self), (str(self), self.chunk, self.earlier_chunks_complete))
