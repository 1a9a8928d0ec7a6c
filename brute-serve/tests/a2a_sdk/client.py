"""The official A2A Python SDK's client against brute-serve (started by tests/a2a.rs).

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
from a2a.utils.errors import TaskNotCancelableError


def message(text, task_id="", context_id=""):
    return Message(
        message_id="m-" + text,
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
        task_id=task_id,
        context_id=context_id,
    )


async def final(client, request):
    """Runs a request; the last task state, the task, and the answer artifact's text."""
    state, task, text = None, None, ""
    async for event in client.send_message(request):
        kind = event.WhichOneof("payload")
        if kind == "task":
            task, state = event.task, event.task.status.state
            for artifact in event.task.artifacts:
                text = "".join(p.text for p in artifact.parts)
        elif kind == "status_update":
            state = event.status_update.status.state
            if task is None or not task.id:
                task = event.status_update
        elif kind == "artifact_update":
            chunk = "".join(p.text for p in event.artifact_update.artifact.parts)
            text = text + chunk if event.artifact_update.append else chunk
    return state, task, text


async def main(base, token):
    http = httpx.AsyncClient(headers={"Authorization": "Bearer " + token}, timeout=60)
    streaming = await create_client(base, ClientConfig(httpx_client=http, streaming=True))
    plain = await create_client(
        base + "/a2a/launcher", ClientConfig(httpx_client=http, streaming=False)
    )

    state, task, text = await final(streaming, SendMessageRequest(message=message("hello")))
    print("stream", TaskState.Name(state), text)
    context = task.context_id
    state, task, text = await final(
        streaming, SendMessageRequest(message=message("again", context_id=context))
    )
    print("same context", TaskState.Name(state), text)

    state, task, _ = await final(plain, SendMessageRequest(message=message("launch")))
    question = task.status.message.parts[0].text.splitlines()[0]
    print("paused", TaskState.Name(state), question)
    state, task, text = await final(
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
    await http.aclose()


asyncio.run(main(sys.argv[1], sys.argv[2]))
