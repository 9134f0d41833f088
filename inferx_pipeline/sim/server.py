"""The aiohttp app: vLLM's OpenAI-compatible API in front of the simulated engine.

Routes: ``POST /v1/completions``, ``POST /v1/chat/completions`` (SSE or JSON),
``GET /v1/models``, ``GET /health`` (503 while loading or after a crash), ``POST
/tokenize``, ``GET /metrics``, ``GET /version``. ``serve_in_background`` runs one on a
loopback port for tests and for ``inferx sim serve``. Answers are filler words up to the
token budget, or, with an answer key (``sim/answers.py``), the key's answer, which ends
the response early (``finish_reason`` ``stop``).
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import random
import signal
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass
from importlib.metadata import version

import orjson
from aiohttp import web

from inferx_pipeline.errors import SimError
from inferx_pipeline.sim.answers import AnswerKey, load_answer_key
from inferx_pipeline.sim.config import SimConfig
from inferx_pipeline.sim.core import EngineCore, build_core
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
from inferx_pipeline.sim.scheduler import SimRequest
from inferx_pipeline.tokens import default_tokenizer

OUTPUT_WORDS = 1024  # generated text cycles through this many vocabulary words
_DONE = b"data: [DONE]\n\n"


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
            ]
        )
        return app

    @property
    def ready(self) -> bool:
        """True once the simulated load time has passed and the engine is alive."""
        return time.perf_counter() >= self._ready_at and not self.engine.died.is_set()

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
            gen = parse_generation(
                await self._body(request), chat, self.tokenizer,
                self.core.max_model_len, self.config.model_name,
            )  # fmt: skip
        except BadRequestError as err:
            return _json_error(str(err), err.kind, err.status)
        if self._errors.random() < self.config.error_rate:
            return _json_error("simulated engine error (--error-rate)", "InternalServerError", 500)
        number = next(self._ids)
        output = self._output(gen, number)
        sim_request = SimRequest(f"{number}", gen.prompt_tokens, output.tokens)
        try:
            stream = self.engine.open(sim_request)
        except EngineDeadError as err:
            return _json_error(str(err), "EngineDeadError", 503)
        try:
            return await self._respond(request, gen, stream, number, output)
        finally:
            self.engine.close(sim_request)

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
        stream: RequestStream,
        number: int,
        output: Output,
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
            return web.json_response(body)
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
        async with running(sim.engine):
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

    Raises SimError when the engine crashed (``--crash-after-tokens``), so a server
    process exits non-zero like a dying engine would.
    """
    if stop is None:
        stop = asyncio.Event()
        loop = asyncio.get_running_loop()
        for signum in (signal.SIGINT, signal.SIGTERM):
            loop.add_signal_handler(signum, stop.set)
    server = SimServer(config)
    async with serve_in_background(config, server) as base_url:
        announce(base_url)
        died = asyncio.create_task(server.engine.died.wait())
        stopped = asyncio.create_task(stop.wait())
        await asyncio.wait({died, stopped}, return_when=asyncio.FIRST_COMPLETED)
        for task in (died, stopped):
            task.cancel()
    if server.engine.died.is_set():
        raise SimError(
            f"simulated engine crashed after {config.crash_after_tokens} generated tokens "
            "(--crash-after-tokens)"
        )
