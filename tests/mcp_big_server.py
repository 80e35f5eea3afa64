"""An MCP server built with the SDK (``MCPServer``, stdio): ``big {size}`` answers with
``size`` characters of numbered lines, ending ``THE-END``."""

from mcp.server.mcpserver import MCPServer

server = MCPServer("big")


@server.tool()
def big(size: int = 20_000_000) -> str:
    """A large text of numbered lines."""
    lines, total, n = [], 0, 0
    while total < size - 8:
        line = f"line {n:08d} " + "x" * 50 + "\n"
        lines.append(line)
        total += len(line)
        n += 1
    return "".join(lines) + "THE-END"


if __name__ == "__main__":
    server.run()
