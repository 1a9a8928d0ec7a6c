"""The official A2A Python SDK's client against brute-serve (started by tests/serve/a2a.rs).

Usage: client.py BASE TOKEN. Prints one line per check; the Rust test compares them.
"""

import asyncio
import sys

import httpx
from a2a.client import ClientConfig, create_client
from a2a.types.a2a_pb2 import (
    CancelTaskRequest,
    GetTaskRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    TaskState,
)
from a2a.utils.errors import TaskNotCancelableError, TaskNotFoundError


def message(text, task_id="", context_id=""):
    return Message(
        message_id="m-" + text,
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


async def final(client, request):
    """Runs a request; the last state, the task, the answer artifact's text and the last
    status message's first line."""
    state, task, text, said = None, None, "", ""
    async for event in client.send_message(request):
        kind = event.WhichOneof("payload")
        if kind == "task":
            task, state = event.task, event.task.status.state
            if event.task.status.message.parts:
                said = event.task.status.message.parts[0].text.splitlines()[0]
            for artifact in event.task.artifacts:
                text = "".join(p.text for p in artifact.parts)
        elif kind == "status_update":
            state = event.status_update.status.state
            if event.status_update.status.message.parts:
                said = event.status_update.status.message.parts[0].text.splitlines()[0]
        elif kind == "artifact_update":
            chunk = "".join(p.text for p in event.artifact_update.artifact.parts)
            text = text + chunk if event.artifact_update.append else chunk
    return state, task, text, said


async def main(base, token):
    http = httpx.AsyncClient(headers={"Authorization": "Bearer " + token}, timeout=60)
    streaming = await create_client(base, ClientConfig(httpx_client=http, streaming=True))
    plain = await create_client(
        base + "/a2a/launcher", ClientConfig(httpx_client=http, streaming=False)
    )

    state, task, text, _ = await final(streaming, SendMessageRequest(message=message("hello")))
    print("stream", TaskState.Name(state), text)
    context = task.context_id
    state, task, text, _ = await final(
        streaming, SendMessageRequest(message=message("again", context_id=context))
    )
    print("same context", TaskState.Name(state), text)

    streaming_launcher = await create_client(
        base + "/a2a/launcher", ClientConfig(httpx_client=http, streaming=True)
    )
    state, task, _, question = await final(
        streaming_launcher, SendMessageRequest(message=message("launch"))
    )
    print("paused", TaskState.Name(state), question)
    state, task, text, _ = await final(
        plain, SendMessageRequest(message=message("approve", task_id=task.id))
    )
    print("resumed", TaskState.Name(state), text)
    got = await plain.get_task(GetTaskRequest(id=task.id))
    print("get", TaskState.Name(got.status.state), len(got.history))
    try:
        await plain.cancel_task(CancelTaskRequest(id=task.id))
        print("cancel accepted")
    except TaskNotCancelableError as e:
        print("cancel refused", type(e).__name__)

    # The same over the HTTP+JSON (REST) binding the card also names.
    rest = ClientConfig(httpx_client=http, streaming=True, supported_protocol_bindings=["HTTP+JSON"])
    rest_echo = await create_client(base, rest)
    state, task, text, _ = await final(rest_echo, SendMessageRequest(message=message("rest")))
    print("rest stream", TaskState.Name(state), text)
    rest_plain = ClientConfig(httpx_client=http, streaming=False, supported_protocol_bindings=["HTTP+JSON"])
    rest_launcher = await create_client(base + "/a2a/launcher", rest_plain)
    state, task, _, question = await final(rest_launcher, SendMessageRequest(message=message("launch")))
    print("rest paused", TaskState.Name(state))
    state, task, text, _ = await final(
        rest_launcher, SendMessageRequest(message=message("no", task_id=task.id))
    )
    print("rest resumed", TaskState.Name(state))
    got = await rest_launcher.get_task(GetTaskRequest(id=task.id))
    print("rest get", TaskState.Name(got.status.state))
    try:
        await rest_launcher.get_task(GetTaskRequest(id="nosuch:0"))
        print("rest found a task that is not there")
    except TaskNotFoundError as e:
        print("rest get refused", type(e).__name__)
    await http.aclose()


asyncio.run(main(sys.argv[1], sys.argv[2]))
