"""Simulated vLLM-compatible inference engine: no GPU, no Docker, real HTTP.

``config`` (SimConfig) -> ``deployment`` (catalog bytes/FLOPs, KV capacity) ->
``roofline`` (step time) + ``scheduler`` (continuous batching) + ``speculative``
(acceptance draws) = ``core`` (one step). ``engine`` drives the core in real time
behind ``server`` (aiohttp, ``prom`` metrics); ``predict`` drives it in virtual time;
``calibrate`` fits ``efficiency`` profiles to measured results. ``answers`` (an answer
key) lets the server answer an eval's questions right, for testing the accuracy path.
"""
