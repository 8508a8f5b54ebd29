"""Both HTTP judge protocols against a real judge server on loopback, with scripted answers:
the exact request each trace sends (one, redacted) and what comes of each kind of answer."""

from __future__ import annotations

import json
import time

import pytest

from otel_semloop.judges import Judge, JudgedScorer, build_question_set
from otel_semloop.judges.backends.openai import SYSTEM_PROMPT, OpenAIBackend
from otel_semloop.judges.backends.system_one import SystemOneBackend
from otel_semloop.judges.http import CircuitBreaker, RetryPolicy
from otel_semloop.judges.questions import DATA_NOTICE
from otel_semloop.scoring import Scorer
from otel_semloop.verdict import Label
from otel_semloop.writeback import verdict_attributes
from tests.judges.judge_support import (
    Reply,
    ScriptedServer,
    healthy_run,
    injected_loop,
    paraphrased_loop,
    system_one_answers,
)

KEY = "sk-test-0123456789abcdefghijklmnop"
FAST_RETRY = RetryPolicy(retries=2, backoff=0.01, max_backoff=0.02)
#: Per request, for the tests that are not about timeouts: a loaded CI machine (load ~14 on 2
#: cores) took over 5 s for a request the server answered in 2 s.
TIMEOUT = 20.0


def system_one(
    url: str, *, timeout: float = TIMEOUT, retry: RetryPolicy = FAST_RETRY, breaker=None
) -> JudgedScorer:
    backend = SystemOneBackend(KEY, base_url=url, timeout=timeout, retry=retry, breaker=breaker)
    return JudgedScorer(Judge(backend, timeout=timeout), escalate="always")


def openai(url: str, **kwargs) -> JudgedScorer:
    backend = OpenAIBackend(
        KEY,
        base_url=url,
        model="judge-model",
        input_usd_per_million=0.5,
        output_usd_per_million=1.5,
        retry=FAST_RETRY,
        **kwargs,
    )
    return JudgedScorer(Judge(backend, timeout=TIMEOUT), escalate="always")


def expected_system_one_payload(trace) -> dict:
    qs = build_question_set(trace)
    return json.loads(json.dumps({"model": "Jev", "state": qs.state, "questions": qs.questions}))


def attrs(verdict) -> dict:
    return verdict_attributes(verdict)


# -- System One ---------------------------------------------------------------------------


def test_system_one_sends_one_exact_request_per_trace_and_a_judged_loop_is_flagged():
    trace = paraphrased_loop()
    questions = build_question_set(trace).questions
    body = {
        "model": "jev-1",
        "usage": {"input_tokens": 2000},
        "answers": system_one_answers(questions, 0.95, 3),
    }
    with ScriptedServer([Reply(body=body)]) as server:
        scorer = system_one(server.url)
        verdict = scorer.score(trace)
        scorer.judge.close()
    assert len(server.received) == 1
    request = server.received[0]
    assert request.path == "/v1/systemone"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.body == expected_system_one_payload(trace)
    a = attrs(verdict)
    assert verdict.label is Label.LOOP and "judge_loop" in verdict.fired_signals
    assert a["semloop.judge.status"] == "judged"
    assert a["semloop.judge.backend"] == "system-one"
    assert a["semloop.judge.model"] == "jev-1"
    assert a["semloop.judge.input_tokens"] == 2000
    assert a["semloop.judge.cost_usd"] == pytest.approx(2000 * 0.042 / 1e6)
    assert a["semloop.judge.reasoning_stagnation"] == 0.0
    assert a["semloop.judge.stagnation_level"] == 3.0
    assert a["semloop.judge.latency_ms"] > 0
    assert "semloop.judge.error" not in a


def test_a_healthy_run_judged_as_progress_stays_healthy():
    trace = healthy_run()
    questions = build_question_set(trace).questions
    body = {"usage": {"input_tokens": 10}, "answers": system_one_answers(questions, 0.05)}
    with ScriptedServer([Reply(body=body)]) as server:
        scorer = system_one(server.url)
        verdict = scorer.score(trace)
        scorer.judge.close()
    assert verdict.label is Label.NO_LOOP
    assert attrs(verdict)["semloop.judge.score"] == 1.0


def test_secrets_and_emails_in_trace_text_never_reach_the_judge():
    trace = paraphrased_loop(
        secret="key sk-live-SECRETSECRETSECRET123 mail ops@example.com postgres://u:hunter2@db/x"
    )
    with ScriptedServer([Reply(body={"answers": {}})]) as server:
        scorer = system_one(server.url)
        scorer.score(trace)
        scorer.judge.close()
    sent = json.dumps(server.received[0].body)
    for secret in ("SECRETSECRETSECRET123", "ops@example.com", "hunter2"):
        assert secret not in sent
    assert "[REDACTED:api_key]" in sent and "[REDACTED:email]" in sent and "[REDACTED:url_password]" in sent


def test_429_is_retried_after_the_retry_after_delay():
    trace = paraphrased_loop()
    questions = build_question_set(trace).questions
    replies = [
        Reply(status=429, body={"error": "slow down"}, headers={"Retry-After": "1"}),
        Reply(body={"usage": {"input_tokens": 5}, "answers": system_one_answers(questions, 0.95)}),
    ]
    with ScriptedServer(replies) as server:
        scorer = system_one(server.url)
        verdict = scorer.score(trace)
        scorer.judge.close()
    assert len(server.received) == 2
    assert server.received[1].at - server.received[0].at >= 0.9
    assert server.received[0].body == server.received[1].body
    assert attrs(verdict)["semloop.judge.status"] == "judged"


def test_a_judge_that_keeps_failing_leaves_the_deterministic_verdict_with_the_error():
    trace = paraphrased_loop()
    deterministic = Scorer().score(trace)
    with ScriptedServer([Reply(status=500, body={"error": "boom"})]) as server:
        scorer = system_one(server.url)
        verdict = scorer.score(trace)
        scorer.judge.close()
    assert len(server.received) == 3  # the first try and two retries
    a = attrs(verdict)
    assert a["semloop.judge.status"] == "error" and a["semloop.judge.error"] == "http_500"
    assert (verdict.label, verdict.score, verdict.fired_signals) == (
        deterministic.label,
        deterministic.score,
        deterministic.fired_signals,
    )
    assert scorer.judge.stats.errors["http_500"] == 1


def test_a_judge_slower_than_its_timeout_is_abandoned_in_time():
    trace = paraphrased_loop()
    with ScriptedServer([Reply(body={"answers": {}}, delay=10.0)]) as server:
        scorer = system_one(server.url, timeout=0.3, retry=RetryPolicy(retries=0))
        started = time.monotonic()
        verdict = scorer.score(trace)
        elapsed = time.monotonic() - started
        scorer.judge.close()
    assert elapsed < 5.0  # gave up long before the answer (10 s); margin for a loaded machine
    assert attrs(verdict)["semloop.judge.error"] == "timeout"
    assert verdict.label is Scorer().score(trace).label


def test_malformed_json_is_a_protocol_error_and_is_not_retried():
    trace = paraphrased_loop()
    with ScriptedServer([Reply(body=b'{"answers": {"progress_0_1": ')]) as server:
        scorer = system_one(server.url)
        verdict = scorer.score(trace)
        scorer.judge.close()
    assert len(server.received) == 1
    assert attrs(verdict)["semloop.judge.error"] == "protocol"


def test_missing_answers_fall_back_to_deterministic_evidence():
    trace = healthy_run()
    deterministic = Scorer().score(trace)
    questions = build_question_set(trace).questions
    answers = {
        "stagnation": system_one_answers(questions, 0.5)["stagnation"],
        "progress_0_1": {"type": "bogus"},
    }
    with ScriptedServer([Reply(body={"answers": answers})]) as server:
        scorer = system_one(server.url)
        verdict = scorer.score(trace)
        scorer.judge.close()
    a = attrs(verdict)
    assert a["semloop.judge.status"] == "judged"
    assert a["semloop.judge.missing_answers"] == len(questions) - 1
    assert a["semloop.judge.undecided"] is True
    assert verdict.label is deterministic.label


def test_an_instruction_inside_a_step_is_sent_as_data_and_cannot_hide_a_loop():
    trace = injected_loop()
    deterministic = Scorer().score(trace)
    assert deterministic.label is Label.LOOP
    questions = build_question_set(trace).questions
    # A judge that obeyed the injected text: every step is progress, nothing repeats.
    obeyed = {
        qid: ({"type": "noul", "noul": 1.0} if qid.startswith("progress") else {"type": "noul", "noul": 0.0})
        for qid, q in questions.items()
        if q["type"] == "noul"
    }
    with ScriptedServer([Reply(body={"answers": obeyed})]) as server:
        scorer = system_one(server.url)
        verdict = scorer.score(trace)
        scorer.judge.close()
    body = server.received[0].body
    assert body == expected_system_one_payload(trace)
    injected = [s for s in body["state"]["steps"] if "IGNORE PREVIOUS INSTRUCTIONS" in s["output"]]
    assert len(injected) == 1
    assert all("IGNORE" not in q["instructions"] for q in body["questions"].values())
    assert all(DATA_NOTICE in q["instructions"] for q in body["questions"].values())
    assert body["state"]["notice"] == DATA_NOTICE
    assert verdict.label is Label.LOOP and verdict.score <= deterministic.score


def test_the_circuit_breaker_stops_calling_a_failing_judge():
    breaker = CircuitBreaker(failures=2, cooldown=60.0)
    with ScriptedServer([Reply(status=500, body={})]) as server:
        scorer = system_one(server.url, retry=RetryPolicy(retries=0), breaker=breaker)
        kinds = [attrs(scorer.score(paraphrased_loop(tid * 32)))["semloop.judge.error"] for tid in "def"]
        scorer.judge.close()
    assert kinds == ["http_500", "http_500", "unavailable"]
    assert len(server.received) == 2


def test_a_batch_sends_one_request_per_trace_concurrently():
    traces = [
        paraphrased_loop("1" * 32),
        healthy_run("2" * 32),
        paraphrased_loop("3" * 32, secret="other words"),
    ]
    delay = 2.0
    with ScriptedServer([Reply(body={"answers": {}}, delay=delay)]) as server:
        scorer = system_one(server.url)
        verdicts = scorer.score_batch(traces)
        scorer.judge.close()
    assert len(server.received) == 3
    assert sorted(json.dumps(r.body, sort_keys=True) for r in server.received) == sorted(
        json.dumps(expected_system_one_payload(t), sort_keys=True) for t in traces
    )
    # In flight together: every request arrived while the first was still being answered
    # (one after another, each would arrive at least `delay` after the previous one).
    arrivals = [r.at for r in server.received]
    assert max(arrivals) - min(arrivals) < delay
    assert [attrs(v)["semloop.judge.status"] for v in verdicts] == ["judged"] * 3


# -- OpenAI-compatible chat completions -------------------------------------------------------


def chat_reply(content: object, prompt_tokens: int = 1000, completion_tokens: int = 200) -> Reply:
    return Reply(
        body={
            "model": "judge-model-2026",
            "choices": [{"index": 0, "message": {"role": "assistant", "content": content}}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens},
        }
    )


def test_openai_sends_one_chat_completion_asking_for_one_json_object():
    trace = paraphrased_loop()
    qs = build_question_set(trace)
    content = json.dumps(
        {
            qid: ({"answer": "no", "probability": 0.95} if qid.startswith("progress") else {"score": 3})
            for qid in qs.questions
            if not qid.startswith(("revisit", "tool"))
        }
        | {qid: True for qid in qs.questions if qid.startswith("tool_repeat")}
    )
    with ScriptedServer([chat_reply(content)]) as server:
        scorer = openai(server.url)
        verdict = scorer.score(trace)
        scorer.judge.close()
    assert len(server.received) == 1
    request = server.received[0]
    assert request.path == "/chat/completions"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    body = request.body
    assert {k: v for k, v in body.items() if k != "messages"} == {
        "model": "judge-model",
        "temperature": 0,
        "response_format": {"type": "json_object"},
    }
    assert body["messages"][0] == {"role": "system", "content": SYSTEM_PROMPT}
    assert body["messages"][1]["role"] == "user"
    assert json.loads(body["messages"][1]["content"]) == json.loads(
        json.dumps({"state": qs.state, "questions": qs.questions})
    )
    a = attrs(verdict)
    assert verdict.label is Label.LOOP
    assert a["semloop.judge.backend"] == "openai" and a["semloop.judge.model"] == "judge-model-2026"
    assert a["semloop.judge.input_tokens"] == 1000 and a["semloop.judge.output_tokens"] == 200
    assert a["semloop.judge.cost_usd"] == pytest.approx((1000 * 0.5 + 200 * 1.5) / 1e6)
    assert a["semloop.judge.reasoning_stagnation"] == 0.0
    assert a["semloop.judge.tool_repetition"] == 0.5


@pytest.mark.parametrize(
    ("replies", "error", "requests"),
    [
        (
            [
                Reply(status=429, body={}, headers={"Retry-After": "0"}),
                Reply(status=503, body={}),
                Reply(status=500, body={}),
            ],
            "http_500",
            3,
        ),
        ([chat_reply("this is not json")], "protocol", 1),
        ([Reply(body={"choices": []})], "protocol", 1),
    ],
)
def test_openai_failures_keep_the_deterministic_verdict(replies, error, requests):
    trace = paraphrased_loop()
    with ScriptedServer(replies) as server:
        scorer = openai(server.url)
        verdict = scorer.score(trace)
        scorer.judge.close()
    assert len(server.received) == requests
    assert attrs(verdict)["semloop.judge.error"] == error
    assert verdict.label is Scorer().score(trace).label


def test_openai_missing_answers_count_and_the_injection_stays_data():
    trace = injected_loop()
    with ScriptedServer([chat_reply(json.dumps({"progress_0_1": "yes"}))]) as server:
        scorer = openai(server.url)
        verdict = scorer.score(trace)
        scorer.judge.close()
    body = server.received[0].body
    assert "IGNORE PREVIOUS INSTRUCTIONS" not in body["messages"][0]["content"]
    assert "IGNORE PREVIOUS INSTRUCTIONS" in body["messages"][1]["content"]
    assert DATA_NOTICE in body["messages"][0]["content"]
    a = attrs(verdict)
    assert a["semloop.judge.missing_answers"] == len(build_question_set(trace).questions) - 2
    assert verdict.label is Label.LOOP
