"""Topics of the live channel besides executions: `plan` and `mesh` changes, their frames, and their logs.

A topic is a dense sequence of frames from 1, kept per process: `TopicLog` numbers, encodes and retains them
(the newest `max_retained`) and offers each to the subscribers of the topic. Everything here is synchronous, as
in the execution store: registering a subscriber and taking its replay happen in one step, so there is no gap
and no duplicate between the replay and the live frames.

`floor` is the lowest cursor a replay is complete from: a topic followed only while someone listens (the plan)
raises it past its last frame when it starts following again after a pause, since changes made during the
pause were never sent.
"""

from __future__ import annotations

import datetime as dt
import functools
from collections import deque
from typing import Annotated, Any, Literal

import msgspec
from msgspec import Meta

from svc.nursery._events import PROTOCOL_VERSION, StreamClosing, StreamLagged, _one_of, _Stream
from svc.nursery._store import Subscriber

__all__ = [
    "MAX_RETAINED",
    "TOPICS",
    "TOPIC_STREAM_TYPES",
    "MeshChangedData",
    "MeshItemChange",
    "PlanChangedData",
    "PlanIssueChange",
    "PlanIssueFacts",
    "Topic",
    "TopicEvent",
    "TopicLog",
    "TopicReady",
    "TopicsReadyData",
    "topic_stream_schema",
]

#: The topics a connection may ask for with `topic=` (`executions` is the channel's own).
Topic = Literal["executions", "plan", "mesh"]
TOPICS: tuple[str, ...] = ("executions", "plan", "mesh")
#: How many frames of one topic are kept for a replay.
MAX_RETAINED = 256
_encoder = msgspec.json.Encoder()


class TopicEvent(msgspec.Struct, frozen=True, kw_only=True):
    """The envelope of a topic frame; `data` depends on `type`."""

    schema_version: str
    event_id: str
    topic: str
    sequence: Annotated[int, Meta(ge=1)]
    timestamp: str
    type: str
    data: Any


class PlanIssueFacts(msgspec.Struct, frozen=True, kw_only=True):
    """The derived facts of one issue that `plan.changed` compares."""

    status: Annotated[str, Meta(description="the derived status (READY, BLOCKED, ACTIVE, VERIFY, DONE, CANCELLED)")]
    wave: Annotated[int, Meta(ge=0, description="the execution wave")]
    blocked_by: Annotated[list[str], Meta(description="what the issue waits on (issue ids, `milestone:<id>`)")]


class PlanIssueChange(msgspec.Struct, frozen=True, kw_only=True):
    """One issue whose status, wave or blockers moved; `before` is null for a new issue, `after` for a gone one."""

    id: str
    before: PlanIssueFacts | None
    after: PlanIssueFacts | None
    dependents: Annotated[list[str], Meta(description="the issues that depend on this one now")]


class PlanChangedData(msgspec.Struct, frozen=True, kw_only=True):
    """What a move of the repository generation changed in the derived plan."""

    generation: Annotated[int, Meta(ge=0, description="the repository generation the plan was derived at")]
    issues: Annotated[list[PlanIssueChange], Meta(description="in id order")]


class MeshItemChange(msgspec.Struct, frozen=True, kw_only=True):
    """One claim, session, review or handover that changed: its key and its state before and after.

    `before` is null for a new item and `after` for one gone from the fold; equal states mean the item changed
    otherwise (a session's info, a review's answers). A handover's state is `published` or `consumed`.
    """

    key: str
    before: str | None
    after: str | None


class MeshChangedData(msgspec.Struct, frozen=True, kw_only=True):
    """The cooperation state's new digest and what moved since the previous one."""

    digest: Annotated[str, Meta(description="the digest of the whole fold now (equal digests, equal states)")]
    previous: Annotated[str | None, Meta(description="the digest the changes are counted from")]
    claims: list[MeshItemChange]
    sessions: list[MeshItemChange]
    reviews: list[MeshItemChange]
    handovers: list[MeshItemChange]


class TopicReady(msgspec.Struct, frozen=True, kw_only=True):
    """A topic of a connection as `stream.ready` reports it."""

    topic: str
    last_sequence: Annotated[int, Meta(ge=0, description="the topic's newest sequence: the next cursor")]
    replayed: int
    truncated: Annotated[
        bool, Meta(description="changes above the cursor were not replayed (re-read the plan or the mesh state)")
    ]
    active: Annotated[bool, Meta(description="whether the topic can change now (mesh: cooperation runs)")]


class TopicsReadyData(msgspec.Struct, frozen=True, kw_only=True, omit_defaults=True):
    """The first frame of a connection (`topics` only when topics were asked for)."""

    protocol_version: str
    scope: Literal["all", "executions", "none"]
    replayed: int
    truncated: bool
    heartbeat_seconds: int
    executions: list[str] | None = None
    topics: list[TopicReady] | None = None


class _TopicEnvelope(msgspec.Struct, frozen=True, kw_only=True, tag_field="type"):
    schema_version: str
    event_id: str
    topic: str
    sequence: int
    timestamp: str


class PlanChanged(_TopicEnvelope, frozen=True, tag="plan.changed"):
    """The derived status, wave or blockers of some issues moved (topic `plan`)."""

    data: PlanChangedData


class MeshChanged(_TopicEnvelope, frozen=True, tag="mesh.changed"):
    """The cooperation state moved to a new digest (topic `mesh`)."""

    data: MeshChangedData


class StreamReadyTopics(_Stream, frozen=True, tag="stream.ready"):
    """First frame."""

    data: TopicsReadyData


AnyFrame = StreamReadyTopics | StreamLagged | StreamClosing | PlanChanged | MeshChanged


@functools.cache
def topic_stream_schema() -> dict[str, Any]:
    """The JSON Schema of every frame of the channel but execution events (`oneOf` on `type`; do not mutate)."""
    return _one_of(AnyFrame)


TOPIC_STREAM_TYPES: tuple[str, ...] = tuple(m.__struct_config__.tag for m in AnyFrame.__args__)


def _now() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"


class TopicLog:
    """One topic's frames: numbered from 1, the newest `max_retained` kept, offered to its subscribers."""

    def __init__(self, topic: str, max_retained: int = MAX_RETAINED) -> None:
        self.topic = topic
        self.max_retained = max_retained
        self.frames: deque[str] = deque()
        self.last_sequence = 0
        #: The lowest cursor a replay is complete from (see the module).
        self.floor = 0
        self.subscribers: set[Subscriber] = set()

    @property
    def key(self) -> str:
        """The key the subscribers' replay marks are kept under (never an execution id)."""
        return f"topic:{self.topic}"

    def publish(self, event_type: str, data: msgspec.Struct) -> str:
        """Number, encode, retain and offer one frame (no checkpoint); answers the frame."""
        sequence = self.last_sequence + 1
        event = TopicEvent(
            schema_version=PROTOCOL_VERSION,
            event_id=f"{self.topic}#{sequence}",
            topic=self.topic,
            sequence=sequence,
            timestamp=_now(),
            type=event_type,
            data=data,
        )
        frame = _encoder.encode(event).decode()
        self.last_sequence = sequence
        self.frames.append(frame)
        if len(self.frames) > self.max_retained:
            self.frames.popleft()
        for subscriber in self.subscribers:
            subscriber.offer(self.key, sequence, frame)
        return frame

    def resumed(self) -> None:
        """The topic starts following again after a pause: no cursor up to its last frame replays completely."""
        if self.last_sequence:
            self.floor = self.last_sequence + 1

    def subscribe(self, subscriber: Subscriber, after: int | None, max_replay: int) -> tuple[list[str], bool]:
        """Register `subscriber` and take its replay in the same step: (frames above `after`, truncated).

        Without a cursor nothing is replayed. A cursor is complete when it is at least `floor`, at most the
        last sequence (a higher one is a cursor of an earlier process), and the retained frames reach it; the
        replay is the newest `max_replay` frames above it, a frame over the subscriber's bound counted dropped.
        """
        self.subscribers.add(subscriber)
        subscriber.marks[self.key] = self.last_sequence if after is None else max(after, self.last_sequence)
        if after is None:
            return [], False
        first = self.last_sequence - len(self.frames) + 1
        frames = list(self.frames)[max(0, after - first + 1) :] if after <= self.last_sequence else []
        truncated = after < self.floor or after > self.last_sequence or first > after + 1 or len(frames) > max_replay
        frames = frames[-max_replay:] if max_replay else []
        replay = [frame for frame in frames if len(frame) <= subscriber.max_frame]
        subscriber.dropped += len(frames) - len(replay)
        return replay, truncated

    def unsubscribe(self, subscriber: Subscriber) -> None:
        """Forget a subscriber."""
        self.subscribers.discard(subscriber)
