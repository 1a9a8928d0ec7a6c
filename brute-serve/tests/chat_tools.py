"""The official OpenAI Python client against brute-serve's chat completions: a tool
loop with a tool the client runs (the agent's own tool runs on the server in the same
reply), streamed and not, with `include_usage`, and structured output through
`chat.completions.parse`. Run by chat_tools.rs with the base URL and the token; prints
one line per check for the Rust test to compare."""

import json
import sys

from openai import OpenAI
from pydantic import BaseModel

client = OpenAI(base_url=sys.argv[1] + "/v1", api_key=sys.argv[2], max_retries=0)
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "description": "The weather in a city.",
            "parameters": {
                "type": "object",
                "properties": {"city": {"type": "string"}},
                "required": ["city"],
            },
        },
    }
]


def weather(city):
    return "sunny in " + city


# The tool loop, not streamed.
messages = [{"role": "user", "content": "What is the weather in Paris?"}]
first = client.chat.completions.create(model="assistant", messages=messages, tools=TOOLS)
choice = first.choices[0]
calls = choice.message.tool_calls or []
print("first:", choice.finish_reason, [c.function.name for c in calls])
messages.append(choice.message.model_dump(exclude_none=True))
for call in calls:
    args = json.loads(call.function.arguments)
    messages.append({"role": "tool", "tool_call_id": call.id, "content": weather(args["city"])})
second = client.chat.completions.create(model="assistant", messages=messages, tools=TOOLS)
print("second:", second.choices[0].finish_reason, second.choices[0].message.content)

# The same loop, streamed, with the usage chunk.
messages = [{"role": "user", "content": "What is the weather in Paris?"}]
stream = client.chat.completions.create(
    model="assistant",
    messages=messages,
    tools=TOOLS,
    stream=True,
    stream_options={"include_usage": True},
)
calls, finish, usage = {}, None, None
for chunk in stream:
    if chunk.usage is not None:
        usage = chunk.usage.total_tokens
    if not chunk.choices:
        continue
    delta = chunk.choices[0].delta
    for part in delta.tool_calls or []:
        call = calls.setdefault(part.index, {"id": "", "name": "", "arguments": ""})
        call["id"] += part.id or ""
        call["name"] += (part.function.name or "") if part.function else ""
        call["arguments"] += (part.function.arguments or "") if part.function else ""
    finish = chunk.choices[0].finish_reason or finish
print("streamed:", finish, [c["name"] for c in calls.values()], "usage", usage)
messages.append(
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {"id": c["id"], "type": "function", "function": {"name": c["name"], "arguments": c["arguments"]}}
            for c in calls.values()
        ],
    }
)
for c in calls.values():
    messages.append({"role": "tool", "tool_call_id": c["id"], "content": weather(json.loads(c["arguments"])["city"])})
stream = client.chat.completions.create(model="assistant", messages=messages, tools=TOOLS, stream=True)
text = "".join(chunk.choices[0].delta.content or "" for chunk in stream if chunk.choices)
print("streamed second:", text)


# Structured output: a JSON schema from a pydantic model, parsed by the client.
class City(BaseModel):
    name: str
    population: int


parsed = client.chat.completions.parse(
    model="assistant",
    messages=[{"role": "user", "content": "The largest city of France, as JSON."}],
    response_format=City,
)
print("parsed:", parsed.choices[0].message.parsed)
