"""An A2A server written with the official A2A Python SDK, for brute's A2aAgent
(started by tests/serve/a2a.rs on 127.0.0.1; prints its port, then serves until killed).

It echoes a message; a message that says "confirm" asks for input first, and the next
message on that task completes it; one that says "chunks" answers "one two three" in
three chunks of one artifact.
"""

import asyncio
import socket

import uvicorn
from starlette.applications import Starlette

from a2a.helpers.proto_helpers import new_task_from_user_message
from a2a.server.agent_execution import AgentExecutor
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types.a2a_pb2 import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    TaskState,
)


class Echo(AgentExecutor):
    async def execute(self, context, event_queue):
        text = context.get_user_input()
        task = context.current_task
        if task is None:
            task = new_task_from_user_message(context.message)
            await event_queue.enqueue_event(task)
        updater = TaskUpdater(event_queue, task.id, task.context_id)
        if task.status.state == TaskState.TASK_STATE_INPUT_REQUIRED:
            await updater.add_artifact([Part(text="confirmed: " + text)], name="answer")
            await updater.complete()
        elif "chunks" in text:
            # One answer in three chunks of one artifact, the last one marked so.
            for i, chunk in enumerate(["one ", "two ", "three"]):
                await updater.add_artifact(
                    [Part(text=chunk)],
                    artifact_id="answer",
                    name="answer",
                    append=i > 0,
                    last_chunk=i == 2,
                )
            await updater.complete()
        elif "confirm" in text:
            await updater.requires_input(
                updater.new_agent_message([Part(text="Really launch? Say yes or no.")])
            )
        else:
            await updater.add_artifact([Part(text="python echo: " + text)], name="answer")
            await updater.complete()

    async def cancel(self, context, event_queue):
        raise NotImplementedError


async def main():
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    sock.listen(64)
    port = sock.getsockname()[1]
    card = AgentCard(
        name="python echo",
        description="Echoes; asks before it confirms.",
        version="1.0.0",
        supported_interfaces=[
            AgentInterface(
                url=f"http://127.0.0.1:{port}/",
                protocol_binding="JSONRPC",
                protocol_version="1.0",
            )
        ],
        capabilities=AgentCapabilities(streaming=True),
        default_input_modes=["text/plain"],
        default_output_modes=["text/plain"],
        skills=[AgentSkill(id="echo", name="echo", description="echoes", tags=["echo"])],
    )
    handler = DefaultRequestHandler(
        agent_executor=Echo(), task_store=InMemoryTaskStore(), agent_card=card
    )
    app = Starlette(
        routes=create_agent_card_routes(card) + create_jsonrpc_routes(handler, rpc_url="/")
    )
    server = uvicorn.Server(uvicorn.Config(app, log_level="warning"))
    print(port, flush=True)
    await server.serve(sockets=[sock])


asyncio.run(main())
