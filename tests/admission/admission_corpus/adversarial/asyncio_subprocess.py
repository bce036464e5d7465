# expect: security.banned_import
# evasion: asyncio can spawn processes and open sockets
import asyncio


async def main():
    proc = await asyncio.create_subprocess_shell("id")
    await proc.wait()


def agent_main(problem_data):
    asyncio.run(main())
    return []
