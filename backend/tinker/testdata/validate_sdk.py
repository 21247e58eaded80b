"""Checks wire traffic dumped by TestDumpForSDKValidation against the
official Tinker SDK v0.3.0's pydantic classes: every request tandem's client
sent must validate as the SDK's (strict, extra="forbid") request class, and
every answer tandem's server gave as the class the SDK parses it into.

    TANDEM_SDK_DUMP=/tmp/dump go test -run TestDumpForSDKValidation ./backend/tinker/
    PYTHONPATH=<sdk>/src python3 validate_sdk.py /tmp/dump
"""
import json
import pathlib
import sys

from tinker import types

requests = {
    "create_session": types.CreateSessionRequest,
    "session_heartbeat": types.SessionHeartbeatRequest,
    "create_model": types.CreateModelRequest,
    "forward_backward": types.ForwardBackwardRequest,
    "forward": types.ForwardRequest,
    "optim_step": types.OptimStepRequest,
    "save_weights": types.SaveWeightsRequest,
    "save_weights_for_sampler": types.SaveWeightsForSamplerRequest,
    "load_weights": types.LoadWeightsRequest,
    "create_sampling_session": types.CreateSamplingSessionRequest,
    "asample": types.SampleRequest,
    "retrieve_future": types.FutureRetrieveRequest,
}
answers = {
    "create_session": types.CreateSessionResponse,
    "session_heartbeat": types.SessionHeartbeatResponse,
    "create_sampling_session": types.CreateSamplingSessionResponse,
    "get_server_capabilities": types.GetServerCapabilitiesResponse,
    "healthz": types.HealthResponse,
    "training_runs": types.TrainingRunsResponse,
}
results = {  # what a future of each call resolves to
    "create_model": types.CreateModelResponse,
    "forward_backward": types.ForwardBackwardOutput,
    "forward": types.ForwardBackwardOutput,
    "optim_step": types.OptimStepResponse,
    "save_weights": types.SaveWeightsResponse,
    "load_weights": types.LoadWeightsResponse,
    "save_weights_for_sampler": types.SaveWeightsForSamplerResponseInternal,
    "asample": types.SampleResponse,
}

dump = pathlib.Path(sys.argv[1])
futures = json.loads((dump / "futures.json").read_text())
checked = 0
for f in sorted(dump.glob("*.json")):
    if f.name == "futures.json":
        continue
    _, ep, kind = f.name.split(".", 2)
    body = json.loads(f.read_text())
    if kind == "request.json":
        if ep in requests:
            requests[ep].model_validate(body)
            checked += 1
        continue
    if not kind.startswith("response.200"):
        assert isinstance(body.get("error"), str), f"{f.name}: error answers carry an error message"
    elif ep in answers:
        answers[ep].model_validate(body)
    elif "~" in ep and ep.endswith("~checkpoints"):
        types.CheckpointsListResponse.model_validate(body)
    elif ep.startswith("training_runs~"):
        types.TrainingRun.model_validate(body)
    elif ep == "retrieve_future":
        if body.get("type") == "try_again":
            types.TryAgainResponse.model_validate(body)
        else:
            req = json.loads(f.with_name(f.name.replace(kind, "request.json")).read_text())
            results[futures[req["request_id"]]].model_validate(body)
    elif ep in results:
        types.UntypedAPIFuture.model_validate(body)
    else:
        raise SystemExit(f"no class for {f.name}")
    checked += 1
print(f"{checked} bodies valid under the SDK's classes")
