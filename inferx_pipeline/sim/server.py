"""The aiohttp app: vLLM's OpenAI-compatible API in front of the simulated engine.

Routes: ``POST /v1/completions``, ``POST /v1/chat/completions`` (SSE or JSON),
``GET /v1/models``, ``GET /health`` (503 while loading or after a crash), ``POST
/tokenize``, ``GET /metrics``, ``GET /version``, ``GET /server_info`` (role and
disaggregation mode). ``serve_in_background`` runs one on a loopback port for tests and
for ``inferx sim serve``. Answers are filler words up to the token budget, or, with an
answer key (``sim/answers.py``), the key's answer, which ends the response early
(``finish_reason`` ``stop``).

Disaggregated roles (``sim/disagg.py``): a prefill worker runs a request carrying a
router's handoff fields as ``max_tokens`` 1 and publishes its KV on a bootstrap server;
a decode worker fetches that KV, waits its transfer time and decodes without prefilling.
A worker with ``nnodes`` > 1 is rank 0 of a rendezvous (``sim/rendezvous.py``): not
ready until every rank joined, dead when one leaves.
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import itertools
import random
import signal
import time
import uuid
from collections.abc import AsyncIterable, AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version

import aiohttp
import orjson
from aiohttp import web

from inferx_pipeline.errors import SimError
from inferx_pipeline.sim.answers import AnswerKey, load_answer_key
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.core import EngineCore, build_core
from inferx_pipeline.sim.disagg import (
    KV_WAIT_S,
    MIN_KV_WAIT_WALL_S,
    Handoff,
    Kv,
    KvBoard,
    KvTransferError,
    PrefillTicket,
    bootstrap_app,
    decode_handoff,
    fetch_kv,
    prefill_ticket,
    serving_bootstrap,
    vllm_transfer_params,
)
from inferx_pipeline.sim.engine import Engine, EngineDeadError, RequestStream, running
from inferx_pipeline.sim.prom import CONTENT_TYPE, SimMetrics
from inferx_pipeline.sim.protocol import (
    BadRequestError,
    Generation,
    SseFrames,
    error_body,
    full_response,
    parse_generation,
    tokenize_body,
    usage_chunk,
    words_text,
)
from inferx_pipeline.sim.rendezvous import Rendezvous, follow_leader
from inferx_pipeline.sim.scheduler import SimRequest
from inferx_pipeline.tokens import default_tokenizer

OUTPUT_WORDS = 1024  # generated text cycles through this many vocabulary words
_DONE = b"data: [DONE]\n\n"
# SGLang's get_server_info names the roles so; "null" is an aggregated server.
_DISAGGREGATION_MODE = {"aggregated": "null", "prefill": "prefill", "decode": "decode"}


@dataclass(frozen=True, slots=True)
class Output:
    """What one response says: ``tokens`` words of ``words`` from ``start`` (cycling), and
    why it ends (``length``: the budget ran out; ``stop``: the answer ended)."""

    words: Sequence[str]
    start: int
    tokens: int
    finish_reason: str


def _json_error(message: str, kind: str, status: int) -> web.Response:
    return web.json_response(error_body(message, kind, status), status=status)


class SimServer:
    """One simulated server: engine core, metrics and the HTTP handlers over them."""

    def __init__(self, config: SimConfig, core: EngineCore | None = None) -> None:
        self.config = config
        self.core = core or build_core(config)
        self.metrics = SimMetrics(config.model_name, config.draft_tokens)
        self.engine = Engine(self.core, self.metrics, config.time_scale)
        self.tokenizer = default_tokenizer()
        self._words = [self.tokenizer.word(i) for i in range(1, OUTPUT_WORDS + 1)]
        self._errors = random.Random(config.seed + 1)
        self._ids = itertools.count()
        self._ready_at = time.perf_counter() + config.load_time_s * config.time_scale
        self.answers: AnswerKey | None = None
        if config.answer_key is not None:
            self.answers = load_answer_key(config.answer_key, config.answer_share)
        # Python's own overheads do not shrink with the time scale: a floor in wall seconds.
        self.kv_wait_s = max(KV_WAIT_S * config.time_scale, MIN_KV_WAIT_WALL_S)
        self.board = KvBoard(self.kv_wait_s) if config.role == "prefill" else None
        self.bootstrap_port = config.bootstrap_port  # the bound one once serving
        self.engine_id = uuid.uuid4().hex
        self.rendezvous: Rendezvous | None = None
        if config.nnodes > 1:
            self.rendezvous = Rendezvous(config.nnodes, self.engine.fail)
        self._session: aiohttp.ClientSession | None = None

    def app(self) -> web.Application:
        """The aiohttp application (the engine task must run alongside: ``running``)."""
        app = web.Application()
        app.add_routes(
            [
                web.post("/v1/completions", self._completions),
                web.post("/v1/chat/completions", self._chat),
                web.get("/v1/models", self._models),
                web.get("/health", self._health),
                web.post("/tokenize", self._tokenize),
                web.get("/metrics", self._metrics),
                web.get("/version", self._version),
                web.get("/server_info", self._server_info),
                web.get("/get_server_info", self._server_info),
            ]
        )
        return app

    @property
    def ready(self) -> bool:
        """True once the load time has passed, every rank joined and the engine is alive."""
        joined = self.rendezvous is None or self.rendezvous.complete
        return joined and time.perf_counter() >= self._ready_at and not self.engine.died.is_set()

    @contextlib.asynccontextmanager
    async def sidecars(self) -> AsyncIterator[None]:
        """Run the bootstrap server (prefill), the rendezvous (nnodes > 1), the KV client."""
        config = self.config
        async with contextlib.AsyncExitStack() as stack:
            if self.board is not None and config.bootstrap_port is not None:
                app = bootstrap_app(self.board, self._sent)
                serving = serving_bootstrap(app, config.host, config.bootstrap_port)
                self.bootstrap_port = await stack.enter_async_context(serving)
            if self.rendezvous is not None and config.master_port is not None:
                await self.rendezvous.start(config.host, config.master_port)
                stack.push_async_callback(self.rendezvous.close)
            stack.push_async_callback(self._close_session)
            yield

    async def _close_session(self) -> None:
        if self._session is not None:
            await self._session.close()

    def _sent(self, kv: Kv) -> None:
        self.metrics.kv_sent_tokens.inc(kv.tokens)

    async def _health(self, _: web.Request) -> web.Response:
        return web.Response(status=200 if self.ready else 503)

    async def _models(self, _: web.Request) -> web.Response:
        name = self.config.model_name
        card = {
            "id": name, "object": "model", "created": int(time.time()), "owned_by": "vllm",
            "root": name, "parent": None, "max_model_len": self.core.max_model_len,
        }  # fmt: skip
        return web.json_response({"object": "list", "data": [card]})

    async def _metrics(self, _: web.Request) -> web.Response:
        return web.Response(body=self.metrics.render(), headers={"Content-Type": CONTENT_TYPE})

    async def _version(self, _: web.Request) -> web.Response:
        return web.json_response({"version": f"inferx-sim-{version('inferx-pipeline')}"})

    async def _server_info(self, _: web.Request) -> web.Response:
        config = self.config
        return web.json_response(
            {
                "role": config.role,
                "disaggregation_mode": _DISAGGREGATION_MODE[config.role],
                "disaggregation_bootstrap_port": self.bootstrap_port,
                "tp_size": config.tp,
                "nnodes": config.nnodes,
                "node_rank": config.node_rank,
                "served_model_name": config.model_name,
            }
        )

    async def _tokenize(self, request: web.Request) -> web.Response:
        try:
            body = tokenize_body(await self._body(request), self.tokenizer, self.core.max_model_len)
        except BadRequestError as err:
            return _json_error(str(err), err.kind, err.status)
        return web.json_response(body)

    async def _completions(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=False)

    async def _chat(self, request: web.Request) -> web.StreamResponse:
        return await self._generate(request, chat=True)

    async def _body(self, request: web.Request) -> object:
        try:
            return orjson.loads(await request.read())
        except orjson.JSONDecodeError as err:
            raise BadRequestError(f"request body is not valid JSON: {err}") from err

    async def _generate(self, request: web.Request, chat: bool) -> web.StreamResponse:
        if not self.ready:
            return _json_error("model is not loaded yet", "ServiceUnavailableError", 503)
        try:
            body = await self._body(request)
            gen = parse_generation(
                body, chat, self.tokenizer, self.core.max_model_len, self.config.model_name
            )
        except BadRequestError as err:
            return _json_error(str(err), err.kind, err.status)
        assert isinstance(body, dict)  # parse_generation refuses anything else
        if self._errors.random() < self.config.error_rate:
            return _json_error("simulated engine error (--error-rate)", "InternalServerError", 500)
        role = self.config.role
        if role == "prefill" and (ticket := prefill_ticket(body, self._fresh_id)) is not None:
            return await self._prefill(request, gen, ticket)
        received = 0
        if role == "decode" and (handoff := decode_handoff(body)) is not None:
            try:
                received = await self._receive(handoff, gen.prompt_tokens)
            except KvTransferError as err:
                return _json_error(str(err), "BadGatewayError", err.status)
        return await self._run(request, gen, received)

    async def _run(
        self,
        request: web.Request,
        gen: Generation,
        received: int = 0,
        on_first: Callable[[], None] | None = None,
        extra: dict[str, object] | None = None,
    ) -> web.StreamResponse:
        """Generate ``gen``: ``received`` prompt tokens' KV is already here (decode role);
        ``on_first`` runs when the first token is out; ``extra`` joins a JSON answer."""
        number = next(self._ids)
        output = self._output(gen, number)
        sim_request = SimRequest(f"{number}", gen.prompt_tokens, output.tokens, computed=received)
        try:
            stream = self.engine.open(sim_request)
        except EngineDeadError as err:
            return _json_error(str(err), "EngineDeadError", 503)
        counts = stream if on_first is None else _after_first(stream, on_first)
        try:
            return await self._respond(request, gen, counts, number, output, extra)
        finally:
            self.engine.close(sim_request)

    def _fresh_id(self) -> str:
        return f"inferx-sim-{self.engine_id[:8]}-{next(self._ids)}"

    async def _prefill(
        self, request: web.Request, gen: Generation, ticket: PrefillTicket
    ) -> web.StreamResponse:
        """Prefill only (the first token), then publish the prompt's KV under the ticket."""
        assert self.board is not None and self.bootstrap_port is not None
        board, tokens = self.board, gen.prompt_tokens
        kv = Kv(tokens, tokens * self.core.deployment.kv_bytes_per_token)
        published: list[bool] = []

        def publish() -> None:
            published.append(True)
            board.publish(ticket.key, kv)

        extra: dict[str, object] | None = None
        if ticket.vllm:  # vllm-router sends it non-streaming and reads this from the JSON
            host = request.url.host or self.config.host
            params = vllm_transfer_params(
                ticket, host, self.bootstrap_port, self.engine_id, tokens, self.config.tp
            )
            extra = {"kv_transfer_params": params}
        one = dataclasses.replace(gen, max_tokens=1, stream=gen.stream and not ticket.vllm)
        try:
            return await self._run(request, one, on_first=publish, extra=extra)
        finally:
            if not published:
                board.fail(ticket.key, "the prefill request ended before its first token")

    async def _receive(self, handoff: Handoff, prompt_tokens: int) -> int:
        """Fetch ``handoff``'s KV and wait its transfer time; the prompt tokens it covers."""
        if self._session is None:
            self._session = aiohttp.ClientSession()
        kv = await fetch_kv(self._session, handoff, self.kv_wait_s)
        seconds = self.core.deployment.kv_transfer_s(kv.kv_bytes)
        await asyncio.sleep(seconds * self.config.time_scale)
        tokens = min(kv.tokens, prompt_tokens)
        self.metrics.kv_received_tokens.inc(tokens)
        self.metrics.kv_received_bytes.inc(kv.kv_bytes)
        self.metrics.kv_transfer_seconds.inc(seconds)
        return tokens

    def _output(self, gen: Generation, number: int) -> Output:
        answer = self.answers.answer(gen.prompt) if self.answers is not None else None
        if answer is None:  # a different word sequence per request
            return Output(self._words, number * 7919, gen.max_tokens, "length")
        words = answer.split()
        if len(words) > gen.max_tokens:  # cut short, as an engine would
            return Output(words, 0, gen.max_tokens, "length")
        return Output(words, 0, len(words), "stop")

    async def _respond(
        self,
        request: web.Request,
        gen: Generation,
        stream: AsyncIterable[int],
        number: int,
        output: Output,
        extra: dict[str, object] | None = None,
    ) -> web.StreamResponse:
        prefix = "chatcmpl" if gen.chat else "cmpl"
        ident, created, model = f"{prefix}-{number:016x}", int(time.time()), self.config.model_name
        finish = output.finish_reason
        if not gen.stream:
            try:
                total = sum([count async for count in stream])
            except EngineDeadError:
                return _abort(request, web.Response(status=500))
            text = words_text(output.words, output.start, total)
            body = full_response(gen, ident, created, model, text, total, finish)
            return web.json_response(body | (extra or {}))
        response = web.StreamResponse(
            headers={"Content-Type": "text/event-stream", "Cache-Control": "no-cache"}
        )
        await response.prepare(request)
        frames = SseFrames(gen, ident, created, model, finish)
        sent = 0
        try:
            async for count in stream:
                text = words_text(output.words, output.start + sent, count)
                sent += count
                await response.write(frames.event(text, sent == count, sent >= output.tokens))
        except EngineDeadError:
            return _abort(request, response)
        except ConnectionResetError:  # the client left; ``close`` frees its batch slot
            return response
        if gen.include_usage:
            chunk = usage_chunk(gen, ident, created, model, sent)
            await response.write(b"data: " + orjson.dumps(chunk) + b"\n\n")
        await response.write(_DONE)
        await response.write_eof()
        return response


async def _after_first(stream: RequestStream, first: Callable[[], None]) -> AsyncIterator[int]:
    """``stream``'s counts, calling ``first`` as the first one arrives."""
    called = False
    async for count in stream:
        if not called:
            called = True
            first()
        yield count


def _abort(request: web.Request, response: web.StreamResponse) -> web.StreamResponse:
    """Cut the connection without finishing the body, as a dying engine process would."""
    if request.transport is not None:
        request.transport.abort()
    return response


@contextlib.asynccontextmanager
async def serve_in_background(
    config: SimConfig, server: SimServer | None = None
) -> AsyncIterator[str]:
    """Serve ``config`` on ``config.host``/``config.port`` (0 = free port); yields the base URL.

    The engine task and the HTTP site stop when the block exits. Raises CatalogError or
    SimError before binding when the configuration cannot run.
    """
    sim = server or SimServer(config)
    runner = web.AppRunner(sim.app(), access_log=None, handle_signals=False)
    await runner.setup()
    try:
        site = web.TCPSite(runner, config.host, config.port)
        await site.start()
        host, port = runner.addresses[0][:2]
        netloc = f"[{host}]:{port}" if ":" in host else f"{host}:{port}"
        async with sim.sidecars(), running(sim.engine):
            yield f"http://{netloc}"
    finally:
        await runner.cleanup()


def serve_forever(config: SimConfig, announce: Callable[[str], None]) -> None:
    """``serve_until_stopped`` on uvloop when installed (cheaper per chunk), else asyncio."""
    try:
        import uvloop
    except ImportError:
        asyncio.run(serve_until_stopped(config, announce))
        return
    uvloop.run(serve_until_stopped(config, announce))


async def serve_until_stopped(
    config: SimConfig, announce: Callable[[str], None], stop: asyncio.Event | None = None
) -> None:
    """Serve until ``stop`` is set (default: until SIGINT/SIGTERM); ``announce`` gets the URL.

    Raises SimError when the engine crashed (``--crash-after-tokens``, a rank of a
    multi-node worker left), so a server process exits non-zero like a dying engine
    would. A rank > 0 serves nothing: it follows rank 0 (``sim/rendezvous.py``) and
    raises SimError when rank 0 goes away.
    """
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
    if config.node_rank > 0:
        assert config.master_addr is not None and config.master_port is not None
        await follow_leader(config.node_rank, config.master_addr, config.master_port, stop)
        return
    server = SimServer(config)
    async with serve_in_background(config, server) as base_url:
        announce(base_url)
        died = asyncio.create_task(server.engine.died.wait())
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({died, stopped}, return_when=asyncio.FIRST_COMPLETED)
        for task in (died, stopped):
            task.cancel()
    if server.engine.died.is_set():
        raise SimError(server.engine.death or "simulated engine died")
