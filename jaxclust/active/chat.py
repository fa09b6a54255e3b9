"""A chat model as an annotator: "are these two items in the same category?" asked of any OpenAI-compatible
chat-completions endpoint (a hosted API, or a local server such as llama.cpp's or vLLM's).

* :class:`ChatEndpoint` is the client: ``POST {base_url}/chat/completions`` with the key from an environment
  variable, a timeout per request, retries with exponential back-off on 429 and 5xx (``Retry-After`` honoured),
  a budget of requests and a count of requests, retries and tokens. Standard library only.
* :class:`ChatOracle` is the oracle: a prompt with the two items (and the user's instructions and worked
  examples), ``n_replies`` sampled replies per pair, each read as same / different / abstain
  (:func:`read_verdict`; anything else is an abstention, logged). It answers ``"must"`` or ``"cannot"`` when the
  replies that did not abstain agree, ``"unknown"`` when they split or all abstained; the votes of each pair are
  kept (:meth:`ChatOracle.votes`) and never asked twice.
* :class:`~jaxclust.active.machine_rates.MachineRates` (:mod:`jaxclust.active.machine_rates`, importable here)
  estimates the machine's two error rates from pairs people also answered and what it said about the others,
  and turns them into the error rate of each of its answers as a soft answer.
* :class:`MachineFirst` routes: the machine answers first (where its replies split, by their majority, an
  answer of another kind with rates of its own), a person where they tie and for a share of checks of each kind
  (:func:`is_checked`) that calibrate its :class:`MachineRates`.
* A :class:`~jaxclust.active.chat_cache.VoteCache` keeps the votes on disk, so that a resumed session sends no
  pair twice and re-learns the rates from the store (:meth:`MachineFirst.calibrate`).

A request that still fails after its retries raises :class:`~jaxclust.errors.ChatError` (an outage must not
become a run of "don't know" answers, which a session never asks again); a spent budget raises
:class:`~jaxclust.active.oracles.SessionStopped`, which ends a session cleanly.
"""

from __future__ import annotations

import email.utils
import hashlib
import json
import logging
import os
import re
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from jaxclust.active.chat_cache import VoteCache, items_digest
from jaxclust.active.machine_rates import (
    CHECK,
    SPLIT_PRIOR,
    MachineRates,
    check_shares,
    is_checked,
    kind_of,
    split_name,
    verdict_of,
)
from jaxclust.active.oracles import SessionStopped, shorten
from jaxclust.active.replies import WORDS
from jaxclust.answers import Answer, ask, check_reply
from jaxclust.errors import ChatError, InvalidInputError
from jaxclust.validation import check_float, check_int, seed_from

# CHECK, check_shares, is_checked, MachineRates, kind_of and split_name live in jaxclust.active.machine_rates and
# are imported here too
__all__ = [
    "ChatEndpoint",
    "ChatOracle",
    "MachineFirst",
    "read_verdict",
    "contradicts",
    "PROMPT",
]

log = logging.getLogger(__name__)

#: The question, with ``{instructions}``, ``{examples}``, ``{a}`` and ``{b}`` filled in.
PROMPT = (
    "{instructions}{examples}Do these two items belong to the same category?\n\n"
    "Item A: {a}\n\nItem B: {b}\n\n"
    "Answer with one word: yes or no."
)

_SAME = {"yes", "same", "true", "y"}
_DIFFERENT = {"no", "different", "false", "n", "not"}


def read_verdict(text: Any) -> str | None:
    """A reply's verdict: ``"must"`` (yes / same), ``"cannot"`` (no / different) or None (anything else: an
    abstention). The first word counts, case and punctuation aside, so ``"Yes."`` and ``"No - they differ"`` are
    read, and ``"I am not sure"`` is not."""
    if not isinstance(text, str):
        return None
    words = re.findall(r"[a-z]+", text.lower())
    if not words:
        return None
    if words[0] in _SAME:
        return "must"
    if words[0] in _DIFFERENT:
        return "cannot"
    return None


@dataclass
class Usage:
    """What an endpoint has cost so far: ``requests`` sent (retries included), ``retries``, ``failures``
    (requests that failed after every retry), ``prompt_tokens`` and ``completion_tokens`` (as the server
    reports them; 0 when it does not)."""

    requests: int = 0
    retries: int = 0
    failures: int = 0
    prompt_tokens: int = 0
    completion_tokens: int = 0
    log: list[dict] = field(default_factory=list, repr=False)  # one entry per failed attempt

    def as_dict(self) -> dict[str, int]:
        return {
            k: getattr(self, k)
            for k in ("requests", "retries", "failures", "prompt_tokens", "completion_tokens")
        }


class ChatEndpoint:
    """An OpenAI-compatible chat-completions endpoint.

    Parameters
    ----------
    base_url : str
        Up to and including the version, e.g. ``"https://api.openai.com/v1"`` or ``"http://127.0.0.1:8080/v1"``.
    model : str
        The model name the server expects.
    api_key_env : str or None
        The environment variable holding the key (sent as ``Authorization: Bearer``); None sends no key (a local
        server). A variable that is named but not set is an error when the first request is made.
    timeout : float
        Seconds to wait for one response.
    max_retries : int
        Further attempts after a 429, a 5xx, a timeout or a dropped connection, waiting ``backoff * 2**k``
        seconds (or the server's ``Retry-After``, at most 60 s).
    backoff : float
    max_requests : int or None
        Requests allowed in all (retries count); then :class:`~jaxclust.active.oracles.SessionStopped`.
    """

    def __init__(
        self,
        base_url: str,
        model: str,
        api_key_env: str | None = "OPENAI_API_KEY",
        timeout: float = 30.0,
        max_retries: int = 4,
        backoff: float = 1.0,
        max_requests: int | None = None,
        sleep: Callable[[float], Any] = time.sleep,
    ):
        if not isinstance(base_url, str) or not re.match(r"^https?://[^/\s]+", base_url):
            raise InvalidInputError(
                f"base_url: expected an http(s) URL such as http://127.0.0.1:8080/v1, got {base_url!r}"
            )
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError(f"model: expected the model's name, got {model!r}")
        if api_key_env is not None and (not isinstance(api_key_env, str) or not api_key_env):
            raise InvalidInputError(
                f"api_key_env: expected an environment variable's name or None, got {api_key_env!r}"
            )
        self.base_url = base_url.rstrip("/")
        self.model = model
        self.api_key_env = api_key_env
        self.timeout = check_float(timeout, "timeout", minimum=0.0, strict=True)
        self.max_retries = check_int(max_retries, "max_retries", minimum=0)
        self.backoff = check_float(backoff, "backoff", minimum=0.0)
        self.max_requests = (
            None if max_requests is None else check_int(max_requests, "max_requests", minimum=1)
        )
        self.sleep = sleep
        self.usage = Usage()

    def _headers(self) -> dict[str, str]:
        headers = {"Content-Type": "application/json"}
        if self.api_key_env is not None:
            key = os.environ.get(self.api_key_env)
            if not key:
                raise ChatError(
                    f"api_key_env: the environment variable {self.api_key_env} is not set; set it to the key of "
                    f"{self.base_url}, or pass api_key_env=None for a server that needs none"
                )
            headers["Authorization"] = f"Bearer {key}"
        return headers

    def complete(
        self, messages: list[dict[str, str]], n: int = 1, temperature: float = 1.0
    ) -> list[str | None]:
        """The text of each of the ``n`` (or fewer, if the server returns fewer) choices of one request."""
        body = json.dumps(
            {"model": self.model, "messages": messages, "n": int(n), "temperature": float(temperature)}
        ).encode()
        url = f"{self.base_url}/chat/completions"
        headers = self._headers()
        for attempt in range(self.max_retries + 1):
            if self.max_requests is not None and self.usage.requests >= self.max_requests:
                raise SessionStopped(
                    f"the chat model's request budget ({self.max_requests} requests) is spent"
                )
            self.usage.requests += 1
            wait = self.backoff * 2**attempt
            try:
                req = urllib.request.Request(url, data=body, headers=headers, method="POST")
                with urllib.request.urlopen(req, timeout=self.timeout) as resp:  # noqa: S310 - the user's URL
                    payload = json.loads(resp.read().decode("utf-8", "replace"))
                return self._choices(payload)
            except urllib.error.HTTPError as exc:
                detail = _error_text(exc)
                if exc.code in (401, 403):
                    raise ChatError(
                        f"{url}: refused the key ({exc.code} {detail}); check the variable {self.api_key_env}"
                    ) from None
                if exc.code != 429 and exc.code < 500:
                    raise ChatError(f"{url}: {exc.code} {detail} (model {self.model!r})") from None
                wait = _retry_after(exc.headers.get("Retry-After"), wait)
                why = f"{exc.code} {detail}"
            except TimeoutError:
                why = f"no response within {self.timeout:g} s"
            except urllib.error.URLError as exc:
                timed_out = isinstance(exc.reason, TimeoutError)
                why = (
                    f"no response within {self.timeout:g} s"
                    if timed_out
                    else f"cannot connect ({exc.reason})"
                )
            except (ConnectionError, OSError) as exc:
                why = f"connection failed ({exc})"
            except ValueError as exc:  # not JSON, or not a chat completion
                why = f"not a chat completion ({exc})"
            self.usage.log.append({"attempt": attempt, "error": why})
            log.warning(
                "chat endpoint %s: %s (attempt %d of %d)", url, why, attempt + 1, self.max_retries + 1
            )
            if attempt == self.max_retries:
                self.usage.failures += 1
                raise ChatError(
                    f"{url}: {why}, after {self.max_retries + 1} attempts; the answers so far are kept: run again "
                    "when the server answers (or raise timeout / max_retries)"
                )
            self.usage.retries += 1
            self.sleep(wait)
        raise AssertionError("unreachable")  # pragma: no cover

    def _choices(self, payload: Any) -> list[str | None]:
        if not isinstance(payload, dict) or not isinstance(payload.get("choices"), list):
            raise ValueError("no 'choices' list")
        usage = payload.get("usage")
        if isinstance(usage, dict):
            for key in ("prompt_tokens", "completion_tokens"):
                if isinstance(usage.get(key), int):
                    setattr(self.usage, key, getattr(self.usage, key) + usage[key])
        out = []
        for choice in payload["choices"]:
            message = choice.get("message") if isinstance(choice, dict) else None
            content = message.get("content") if isinstance(message, dict) else None
            out.append(content if isinstance(content, str) else None)
        return out


def _error_text(exc: urllib.error.HTTPError) -> str:
    try:
        body = exc.read().decode("utf-8", "replace")
        msg = json.loads(body).get("error", {})
        return str(msg.get("message", msg) if isinstance(msg, dict) else msg)[:200] or exc.reason
    except (ValueError, AttributeError, OSError):
        return str(exc.reason)


def _retry_after(value: str | None, default: float) -> float:
    """Seconds to wait from a ``Retry-After`` header (seconds or an HTTP date), at most 60; ``default`` if absent."""
    if not value:
        return default
    try:
        return min(60.0, max(0.0, float(value)))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value).timestamp()
        return min(60.0, max(0.0, when - time.time()))
    except (TypeError, ValueError):
        return default


class ChatOracle:
    """Answers pairs by asking a chat model; ``"unknown"`` when its replies split.

    Parameters
    ----------
    texts : sequence of str
        What the model is shown of each item (cut to ``max_chars``).
    endpoint : ChatEndpoint
    instructions : str
        Put before the question: what "same category" means for these items.
    examples : sequence of (str, str, bool)
        Worked examples ``(item a, item b, same?)`` shown before the question.
    n_replies : int
        Replies sampled per pair (one request asks for all; a server that returns fewer is asked again).
    temperature : float
    max_chars : int
    name : str or None
        The annotator's name in a store (``annotator``, which :class:`~jaxclust.active.ActiveLearner` stores with
        its answers), by default ``"<model> (prompt <digest>)"``: a new prompt is a new annotator. The majority
        of replies that split is stored under ``split_annotator``, ``"<name>, split replies"``: its error rates
        are its own.
    cache : VoteCache, path or None
        Where the votes are kept across sessions (:mod:`jaxclust.active.chat_cache`); votes of this prompt
        about the same two texts are read from it instead of asked again.
    """

    def __init__(
        self,
        texts: Sequence[str],
        endpoint: ChatEndpoint,
        instructions: str = "",
        examples: Sequence[tuple[str, str, bool]] = (),
        n_replies: int = 5,
        temperature: float = 1.0,
        max_chars: int = 1500,
        name: str | None = None,
        cache: VoteCache | str | os.PathLike | None = None,
    ):
        if isinstance(texts, str) or not all(isinstance(t, str) for t in texts):
            raise InvalidInputError("texts: expected a sequence of strings, one per item")
        if not isinstance(endpoint, ChatEndpoint):
            raise InvalidInputError(f"endpoint: expected a ChatEndpoint, got {type(endpoint).__name__}")
        if not isinstance(instructions, str):
            raise InvalidInputError(f"instructions: expected a string, got {type(instructions).__name__}")
        for k, ex in enumerate(examples):
            if not (
                isinstance(ex, tuple | list) and len(ex) == 3 and all(isinstance(x, str) for x in ex[:2])
            ):
                raise InvalidInputError(f"examples[{k}]: expected (item a, item b, same?), got {ex!r}")
        self.texts = list(texts)
        self.endpoint = endpoint
        self.instructions = instructions
        self.examples = [(str(a), str(b), bool(s)) for a, b, s in examples]
        self.n_replies = check_int(n_replies, "n_replies", minimum=1)
        self.temperature = check_float(temperature, "temperature", minimum=0.0)
        self.max_chars = check_int(max_chars, "max_chars", minimum=20)
        self.annotator = name if name is not None else f"{endpoint.model} (prompt {self.prompt_digest()})"
        self.split_annotator = split_name(self.annotator)
        self._votes: dict[tuple[int, int], tuple[int, int, int]] = {}
        self.cache = cache if cache is None or isinstance(cache, VoteCache) else VoteCache(cache)
        if self.cache is not None:
            for (a, b, items), votes in self.cache.read(self.prompt_digest()).items():
                if 0 <= a < b < len(self.texts) and items == items_digest(self.texts[a], self.texts[b]):
                    self._votes[(a, b)] = votes

    def prompt(self, i: int, j: int) -> str:
        """The question about items ``i`` and ``j``."""
        instructions = self.instructions.strip() + "\n\n" if self.instructions.strip() else ""
        examples = "".join(  # one line each, so that only the question's lines start with "Item"
            f"Example: Item A: {shorten(a, self.max_chars)} | Item B: {shorten(b, self.max_chars)} | "
            f"Answer: {'yes' if same else 'no'}\n"
            for a, b, same in self.examples
        )
        examples += "\n" if examples else ""
        return PROMPT.format(
            instructions=instructions,
            examples=examples,
            a=shorten(self.texts[i], self.max_chars),
            b=shorten(self.texts[j], self.max_chars),
        )

    def prompt_digest(self) -> str:
        """Eight hex digits naming the prompt (instructions, examples and template), not the items."""
        desc = json.dumps([PROMPT, self.instructions, self.examples, self.n_replies, self.temperature])
        return hashlib.sha256(desc.encode()).hexdigest()[:8]

    def votes(self, i: int, j: int) -> tuple[int, int, int]:
        """``(same, different, abstained)`` among the pair's replies, asking the model the first time."""
        key = (min(i, j), max(i, j))
        if key not in self._votes:
            a, b = key
            messages = [{"role": "user", "content": self.prompt(a, b)}]
            replies: list[str | None] = []
            while len(replies) < self.n_replies:
                got = self.endpoint.complete(
                    messages, n=self.n_replies - len(replies), temperature=self.temperature
                )
                if not got:
                    got = [None]  # an empty choice list is one abstention, so this ends
                replies.extend(got[: self.n_replies - len(replies)])
            verdicts = [read_verdict(r) for r in replies]
            for r, v in zip(replies, verdicts, strict=True):
                if v is None:
                    log.info(
                        "chat oracle: pair (%d, %d): reply %r read as an abstention",
                        a,
                        b,
                        shorten(str(r), 80),
                    )
            votes = (verdicts.count("must"), verdicts.count("cannot"), verdicts.count(None))
            if self.cache is not None:
                self.cache.add(a, b, self.prompt_digest(), items_digest(self.texts[a], self.texts[b]), votes)
            self._votes[key] = votes
        return self._votes[key]

    def known(self, i: int, j: int) -> tuple[int, int, int] | None:
        """The pair's votes if it was asked (in this session or, through the cache, an earlier one); never asks."""
        return self._votes.get((min(i, j), max(i, j)))

    def answer(self, i: int, j: int) -> str:
        return verdict_of(self.votes(i, j))

    def __call__(self, i: int, j: int) -> str:
        return self.answer(i, j)


def contradicts(samples: np.ndarray | None, i: int, j: int, verdict: str, sure: float | None) -> bool:
    """Whether at least a share ``sure`` of the partitions ``samples`` (S, n) say the opposite of ``verdict``
    (``"must"`` or ``"cannot"``) about items ``i`` and ``j``; False without samples or when ``sure`` is None."""
    if samples is None or sure is None:
        return False
    together = float(np.mean(samples[:, i] == samples[:, j]))
    return together <= 1.0 - sure if verdict == "must" else together >= sure


class MachineFirst:
    """The machine answers first; a person answers where it matters, and checks a share of the machine's answers.

    For each question the chat model is asked (its votes). Where its replies agree, its verdict is its answer;
    where they split, the majority's is, an answer of another kind (stored under the machine's
    ``split_annotator``, with error rates of its own, ``split_rates``). The question goes to ``person`` (any
    oracle) when the replies tie or all abstained; for a share of each kind's answers, by what the machine said
    (``check`` and ``split_check``; :func:`is_checked`: a seeded hash of the pair), so that the kind's
    :class:`MachineRates` learn how often it is wrong (both answers are compared, the person's is used; these
    checks, with what the machine said about the pairs nobody checked, are the rates' evidence, as the other
    routes pick pairs the machine is likelier to get wrong); and when the clustering model is sure of the
    opposite (a share ``sure`` of its samples, which :class:`~jaxclust.active.ActiveLearner` passes to
    :meth:`observe`, say so). Otherwise the machine's answer stands, returned as an
    :class:`~jaxclust.active.oracles.Answer` under the kind's name, so a session stores it as the machine's and
    gives it the kind's error rate when ``error_rate`` says so: pass ``ActiveLearner(...,
    error_rate=oracle.error_rates())``.

    Parameters
    ----------
    machine : ChatOracle
    person : oracle
        Answers the questions routed to people (``InteractiveOracle`` at a terminal; ``GoldOracle`` in an
        experiment); its answers are stored under the session's annotator.
    rates : MachineRates or None
        The error rates of the machine's unanimous answers, updated by every check (a new one when None).
    check : float in [0, 1] or dict
        The share of the machine's unanimous answers also asked of a person: one for both answers, or
        ``{"must": share, "cannot": share}`` (default :data:`CHECK`: a fifth of its "same"s, a twentieth of its
        "different"s).
    split_check : float in [0, 1] or dict or None
        The same for the majority of split replies (default: ``check``'s shares). 1 sends every split to a
        person.
    sure : float in [0.5, 1] or None
        A verdict against what at least this share of the model's samples say goes to a person (None: never).
    random_state : int
    tell : callable, optional
        Called with a line saying each answer the machine gave (a terminal session prints it).

    Attributes
    ----------
    split_rates : MachineRates
        The error rates of the split replies' majority, under the prior :data:`SPLIT_PRIOR`.
    routes : list of dict
        One per question: ``i``, ``j``, the machine's ``votes``, ``verdict`` (its answer: the unanimous or the
        majority verdict, ``"unknown"`` on a tie), ``split`` (whether the replies split), ``to`` (``"machine"``
        or ``"person"``), ``why`` (``"tie"``, ``"check"``, ``"contradicts"`` or None) and the ``person``'s
        answer when asked.
    """

    def __init__(
        self,
        machine: ChatOracle,
        person: Any,
        rates: MachineRates | None = None,
        check: Any = None,
        sure: float = 0.95,
        random_state=0,
        tell: Callable[[str], Any] | None = None,
        split_check: Any = None,
    ):
        if not isinstance(machine, ChatOracle):
            raise InvalidInputError(f"machine: expected a ChatOracle, got {type(machine).__name__}")
        fn = getattr(person, "answer", person)
        if not callable(fn):
            raise InvalidInputError(
                f"person: expected an oracle (answer(i, j) or a callable), got {person!r}"
            )
        if rates is not None and not isinstance(rates, MachineRates):
            raise InvalidInputError(f"rates: expected MachineRates or None, got {type(rates).__name__}")
        self.machine, self.person = machine, person
        self.rates = MachineRates() if rates is None else rates
        self.split_rates = MachineRates(SPLIT_PRIOR)
        self.check = check_shares(CHECK if check is None else check)
        self.split_check = self.check if split_check is None else check_shares(split_check, "split_check")
        self.sure = None if sure is None else check_float(sure, "sure", minimum=0.5, maximum=1.0)
        self.samples: np.ndarray | None = None
        self.tell = tell
        self.seed = seed_from(random_state)
        self.routes: list[dict[str, Any]] = []

    def error_rates(self, person_rate: float = 0.0) -> dict[str, Any]:
        """``error_rate`` for the learner: the machine's rates for each kind of its answers, ``person_rate`` for
        everyone else's."""
        m = self.machine
        return {"*": person_rate, m.annotator: self.rates, m.split_annotator: self.split_rates}

    def answer(self, i: int, j: int) -> Any:
        votes = self.machine.votes(i, j)
        verdict, split = kind_of(votes)
        rates, shares = (self.split_rates, self.split_check) if split else (self.rates, self.check)
        route = {
            "i": i,
            "j": j,
            "votes": votes,
            "verdict": verdict,
            "split": split,
            "to": "machine",
            "why": None,
        }
        self.routes.append(route)
        if verdict == "unknown":
            route.update(to="person", why="tie")
        elif is_checked(self.seed, min(i, j), max(i, j), shares[verdict]):
            route.update(to="person", why="check")
        else:
            rates.saw(verdict)
            if contradicts(self.samples, i, j, verdict, self.sure):
                route.update(to="person", why="contradicts")
        if route["to"] == "machine":
            if self.tell is not None:
                same, different, abstained = votes
                self.tell(
                    f"{self.machine.annotator}: {WORDS[verdict]} for {i}-{j} ({same} same, {different} different"
                    + (f", {abstained} unread" if abstained else "")
                    + (", the majority" if split else "")
                    + ")"
                )
            return Answer(verdict, self.machine.split_annotator if split else self.machine.annotator)
        said = check_reply(ask(self.person, i, j), i, j, name="person")
        route["person"] = said
        if route["why"] == "check":
            rates.add(verdict, said)
        return said

    def calibrate(self, records: Sequence[dict]) -> None:
        """The rates learned again from ``records`` (a resumed store's answers in effect): each pair whose votes
        the machine's cache holds counts as it did when it was asked: a checked pair with the person's answer,
        any other verdict once, as one nobody checked."""
        self.rates.reset()
        self.split_rates.reset()
        machine = {self.machine.annotator, self.machine.split_annotator}
        seen: set[tuple[int, int]] = set()
        for rec in records:
            i, j = min(rec["i"], rec["j"]), max(rec["i"], rec["j"])
            votes = self.machine.known(i, j)
            if votes is None:
                continue
            verdict, split = kind_of(votes)
            if verdict == "unknown":
                continue
            rates, shares = (self.split_rates, self.split_check) if split else (self.rates, self.check)
            if not is_checked(self.seed, i, j, shares[verdict]):
                if (i, j) not in seen:  # once a pair, however many answered it after
                    rates.saw(verdict)
                    seen.add((i, j))
            elif rec.get("annotator") not in machine:
                rates.add(verdict, rec["answer"])

    def observe(self, samples: np.ndarray) -> None:
        """The partitions (S, n) the session's model holds now (:class:`~jaxclust.active.ActiveLearner` passes
        them before each question)."""
        self.samples = samples

    def undone(self, record: dict | None, message: str) -> None:
        """An undo (``u`` at the terminal) is the person's: their oracle is told, as it would be without this."""
        tell = getattr(self.person, "undone", None)
        if callable(tell):
            tell(record, message)
