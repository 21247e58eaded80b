"""Writes the request bodies the official Tinker SDK v0.3.0 sends, built the
way its clients build them, as JSON fixtures for wire's tests.

Each request is dumped twice: "sdk" is what goes on the wire
(model_dump(exclude_unset=True, mode="json")); "full" sets every field
(exclude_unset=False), discriminators and nulls included.

Run with the SDK's src/ on PYTHONPATH (its types only need pydantic):
    PYTHONPATH=<sdk>/src python3 gen.py
"""
import json
import pathlib

from tinker import types

out = pathlib.Path(__file__).parent
session, model, ss = "sess-1", "model-1", "samp-1"

datum = types.Datum(
    model_input=types.ModelInput.from_ints([11, 12, 13]),
    loss_fn_inputs={
        "target_tokens": [12, 13, 14],  # a bare list: the SDK converts it by key
        "weights": types.TensorData(data=[0.0, 1.0, 1.0], dtype="float32"),
    },
)
rl_datum = types.Datum(
    model_input=types.ModelInput(chunks=[types.EncodedTextChunk(tokens=[1, 2]), types.EncodedTextChunk(tokens=[3])]),
    loss_fn_inputs={
        "target_tokens": types.TensorData(data=[2, 3, 4], dtype="int64", shape=[3]),
        "logprobs": [-0.5, -1.25, -2.0],
        "advantages": [1.0, 1.0, -0.5],
    },
)

requests = {
    "create_session": types.CreateSessionRequest(tags=[], user_metadata={}, sdk_version="0.3.0"),
    "session_heartbeat": types.SessionHeartbeatRequest(session_id=session),
    "create_model": types.CreateModelRequest(
        session_id=session, model_seq_id=0, base_model="Qwen/Qwen3-8B",
        lora_config=types.LoraConfig(rank=32, seed=None, train_mlp=True, train_attn=True, train_unembed=True),
        user_metadata=None),
    "forward_backward": types.ForwardBackwardRequest(
        forward_backward_input=types.ForwardBackwardInput(data=[datum], loss_fn="cross_entropy", loss_fn_config=None),
        model_id=model, seq_id=1),
    "forward_backward.ppo": types.ForwardBackwardRequest(
        forward_backward_input=types.ForwardBackwardInput(
            data=[rl_datum], loss_fn="ppo", loss_fn_config={"clip_low_threshold": 0.8, "clip_high_threshold": 1.2}),
        model_id=model, seq_id=2),
    "forward": types.ForwardRequest(
        forward_input=types.ForwardBackwardInput(data=[datum], loss_fn="cross_entropy", loss_fn_config=None),
        model_id=model, seq_id=3),
    "optim_step": types.OptimStepRequest(adam_params=types.AdamParams(learning_rate=4e-5), model_id=model, seq_id=4),
    "save_weights": types.SaveWeightsRequest(model_id=model, path="ckpt-1", seq_id=5),
    "load_weights": types.LoadWeightsRequest(model_id=model, path="tinker://model-1/weights/ckpt-1", seq_id=6),
    "save_weights_for_sampler": types.SaveWeightsForSamplerRequest(model_id=model, path="step-7", seq_id=7),
    "save_weights_for_sampler.ephemeral": types.SaveWeightsForSamplerRequest(model_id=model, seq_id=8, sampling_session_seq_id=1),
    "create_sampling_session": types.CreateSamplingSessionRequest(
        session_id=session, sampling_session_seq_id=0, model_path="tinker://model-1/sampler_weights/step-7", base_model=None),
    "create_sampling_session.base": types.CreateSamplingSessionRequest(
        session_id=session, sampling_session_seq_id=1, model_path=None, base_model="Qwen/Qwen3-8B"),
    "asample": types.SampleRequest(
        sampling_session_id=ss, seq_id=0, num_samples=4, prompt=types.ModelInput.from_ints([1, 2, 3]),
        sampling_params=types.SamplingParams(max_tokens=20, temperature=0.7, stop=["\n"]),
        prompt_logprobs=False, topk_prompt_logprobs=0),
    "asample.stop_ids": types.SampleRequest(
        sampling_session_id=ss, seq_id=1, num_samples=1, prompt=types.ModelInput.from_ints([1]),
        sampling_params=types.SamplingParams(max_tokens=8, seed=3, stop=[7, 9], top_k=5, top_p=0.9),
        prompt_logprobs=False, topk_prompt_logprobs=0),
    "asample.stop_string": types.SampleRequest(
        sampling_session_id=ss, seq_id=2, num_samples=1, prompt=types.ModelInput.from_ints([1]),
        sampling_params=types.SamplingParams(max_tokens=8, stop="###"),
        prompt_logprobs=False, topk_prompt_logprobs=0),
    "asample.compute_logprobs": types.SampleRequest(
        sampling_session_id=ss, seq_id=3, num_samples=1, prompt=types.ModelInput.from_ints([5, 6, 7]),
        sampling_params=types.SamplingParams(max_tokens=1), prompt_logprobs=True, topk_prompt_logprobs=0),
    "retrieve_future": types.FutureRetrieveRequest(request_id="req-1"),
    "get_info": types.GetInfoRequest(model_id=model),
    "unload_model": types.UnloadModelRequest(model_id=model),
}

for name, req in requests.items():
    for variant, unset in (("sdk", True), ("full", False)):
        body = req.model_dump(exclude_unset=unset, mode="json")
        (out / f"{name}.{variant}.json").write_text(json.dumps(body, sort_keys=True) + "\n")
print(f"wrote {2 * len(requests)} fixtures")
