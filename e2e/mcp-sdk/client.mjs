// The official TypeScript MCP SDK (@modelcontextprotocol/sdk, pinned in package-lock.json) as a
// client of the hub: one streamable-HTTP session, opened with the initialize handshake against
// FAROS_MCP_URL with FAROS_MCP_TOKEN as bearer. TLS trusts the test CA through NODE_EXTRA_CA_CERTS,
// which the test sets (Node reads it at start). Driven by e2e/tests/replicas.rs over the JSON-lines
// protocol of README.md in this folder, shared with client.py.

import readline from 'node:readline';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ToolListChangedNotificationSchema } from '@modelcontextprotocol/sdk/types.js';

const emit = (line) => process.stdout.write(`${JSON.stringify(line)}\n`);

const transport = new StreamableHTTPClientTransport(new URL(need('FAROS_MCP_URL')), {
  requestInit: { headers: { Authorization: `Bearer ${need('FAROS_MCP_TOKEN')}` } },
});
const client = new Client({ name: 'faros-e2e-typescript-sdk', version: '0.0.0' });
// Arrives on the session's standalone GET stream, which the SDK opens after initialization.
client.setNotificationHandler(ToolListChangedNotificationSchema, () => emit({ event: 'tools/list_changed' }));
client.onerror = (e) => process.stderr.write(`client error: ${e}\n`);
await client.connect(transport);
emit({ event: 'ready', protocolVersion: transport.protocolVersion ?? null });

async function run(command) {
  switch (command.op) {
    case 'list': {
      const { tools } = await client.listTools();
      return { op: 'list', tools: tools.map((t) => t.name).sort() };
    }
    case 'call': {
      const result = await client.callTool({ name: command.name, arguments: command.arguments ?? {} });
      const text = (result.content ?? []).filter((c) => c.type === 'text').map((c) => c.text).join('');
      return { op: 'call', isError: Boolean(result.isError), text };
    }
    default:
      return { op: command.op, error: `unknown op ${JSON.stringify(command.op)}` };
  }
}

// One command at a time, replies in order.
for await (const line of readline.createInterface({ input: process.stdin })) {
  const command = JSON.parse(line);
  if (command.op === 'close') break;
  try {
    emit(await run(command));
  } catch (e) {
    emit({ op: command.op, error: String(e) });
  }
}
await client.close();
emit({ op: 'close' });

function need(name) {
  const v = process.env[name];
  if (!v) throw new Error(`${name} is not set`);
  return v;
}
