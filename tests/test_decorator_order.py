"""Notebook 02's decorator-order lesson, checked: reversed decorators answer HTTP 200 and the
Job Runtime records no reward; the course's stacking records one."""

from __future__ import annotations

import pytest
from bedrock_agentcore import BedrockAgentCoreApp
from sagemaker.train.rft import sagemaker_rft_handler

from mtrl_course import aws, config, dataset, local
from wordle_agent import main, rollout


@pytest.fixture
def offline(offline_backend):
    return offline_backend


def _job_arn(session) -> str:
    account = session.client("sts").get_caller_identity()["Account"]
    return f"arn:aws:sagemaker:{session.region_name}:{account}:job/AgentRFT/decorator-order-test"


def _task() -> str:
    return dataset.read_rows(config.VALIDATION_FILE)[0]["prompt"]


def test_the_course_stacking_reports_the_reward_it_answers(offline):
    done = local.invoke_app_in_process(
        main.app, _task(), job_arn=_job_arn(aws.session()), rollout_id="order-right-0001"
    )
    assert done.status == 200
    assert done.reward_recorded == (done.body["reward"],) and done.record.state == "reward_received"
    assert done.record.sample_count >= 1  # the stand-in policy really played
    assert not done.rejected


def test_reversed_decorators_answer_200_but_record_no_reward(offline):
    reversed_app = BedrockAgentCoreApp()

    @sagemaker_rft_handler
    @reversed_app.entrypoint
    def handle_reversed(payload: dict) -> dict:
        return rollout.run_rollout(payload, model=rollout.openai_policy_model)

    # The SDK's only hint: a warning that the model client found no rollout context.
    with pytest.warns(UserWarning, match="no rollout context set"):
        done = local.invoke_app_in_process(
            reversed_app, _task(), job_arn=_job_arn(aws.session()), rollout_id="order-wrong-0001"
        )
    # AgentCore calls the bare function: HTTP 200 with a reward, so nothing looks wrong ...
    assert done.status == 200 and isinstance(done.body["reward"], float)
    # ... but the SDK's wrapper never ran: no rollout context, so the model calls carried no job
    # headers and were refused, and no reward report reached the Job Runtime.
    assert done.record is None and done.reward_recorded == ()
    assert done.rejected and all(r.status in (400, 403) for r in done.rejected)
