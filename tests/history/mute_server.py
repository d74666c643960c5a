#!/usr/bin/env python3
"""A server that accepts connections, reads every line and never answers.

The black-box checker must not pass it: what the contract answers at once
is owed an answer. Used by tests/history/mute.sh.
usage: mute_server.py --port P [anything else is ignored]
"""
import argparse
import asyncio


async def swallow(reader, writer):
    try:
        while await reader.read(65536):
            pass
    finally:
        writer.close()


async def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--port", type=int, required=True)
    options, _ = parser.parse_known_args()
    server = await asyncio.start_server(swallow, "127.0.0.1", options.port)
    async with server:
        await server.serve_forever()


asyncio.run(main())
