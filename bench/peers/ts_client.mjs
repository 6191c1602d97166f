// The TypeScript SDK v2 client (@modelcontextprotocol/client), timed by the
// rtt bench: `node ts_client.mjs URL MODE RUNS TOOL ARGS_JSON`, MODE one of
// default (the SDK's default negotiation, 'legacy'), auto, prior. Each run
// builds a new Client and transport, as the SDK's docs show, in this one
// warm process (node's fetch keeps its connections). One JSON line per run:
// {"establish_ms": ..., "first_result_ms": ...}; a warm-up run first.
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, mode, runs, tool, args] = process.argv.slice(2);
const argumentsObject = JSON.parse(args);

async function once(prior) {
  const options = mode === 'auto' || mode === 'prior' ? { versionNegotiation: { mode: 'auto' } } : {};
  const client = new Client({ name: 'rtt-bench', version: '1' }, options);
  const transport = new StreamableHTTPClientTransport(new URL(url));
  const start = performance.now();
  await client.connect(transport, prior ? { prior } : undefined);
  const established = performance.now();
  await client.callTool({ name: tool, arguments: argumentsObject });
  const done = performance.now();
  const discover = client.getDiscoverResult();
  await client.close();
  return { establish_ms: established - start, first_result_ms: done - start, discover };
}

let prior;
const warm = await once(undefined);
if (mode === 'prior') {
  if (!warm.discover) throw new Error('no discover result to reuse');
  prior = { kind: 'modern', discover: warm.discover };
}
for (let i = 0; i < Number(runs); i++) {
  const { establish_ms, first_result_ms } = await once(prior);
  console.log(JSON.stringify({ establish_ms, first_result_ms }));
}
