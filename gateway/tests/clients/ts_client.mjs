// The TypeScript SDK v2 client (@modelcontextprotocol/client 2.4.0)
// through `mcp-connect serve`: lists and calls the tools of two members
// (an HTTP and a stdio server-everything, each tool under its member's
// name), receives progress, cancels a call, and answers the sampling and
// elicitation requests a member sends (in a 2025 session as requests, in
// 2026-07-28 as input_required rounds). Exits non-zero at the first thing
// that is not so.
//
// usage: node ts_client.mjs URL (legacy | auto)
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';

const [url, mode] = process.argv.slice(2);
const legacy = mode === 'legacy';
const fail = (message) => { console.error(message); process.exit(1); };
const text = (result) => result.content.map((block) => block.text ?? '').join(' ');
const sleep = (ms) => new Promise((done) => setTimeout(done, ms));
setTimeout(() => fail('not within 120 s'), 120_000).unref();

const options = {
  capabilities: { sampling: {}, elicitation: { form: {} } },
  ...(legacy ? {} : { versionNegotiation: { mode: 'auto' } }),
};
const client = new Client({ name: 'gateway-interop', version: '1' }, options);
client.setRequestHandler('sampling/createMessage', async () => ({
  model: 'canned', role: 'assistant', content: { type: 'text', text: 'ts canned reply' },
}));
client.setRequestHandler('elicitation/create', async (request) => {
  const properties = request.params.requestedSchema?.properties ?? {};
  const content = {};
  for (const [name, schema] of Object.entries(properties)) {
    if (schema.default !== undefined) content[name] = schema.default;
  }
  return { action: 'accept', content };
});
await client.connect(new StreamableHTTPClientTransport(new URL(url)));
// `auto` ends on 2026-07-28 with this gateway (it answers server/discover).
if (!legacy && !client.getDiscoverResult()) fail('auto did not end on 2026-07-28');

// Both members may still be starting: their tools show once they are.
let names = new Set();
for (let i = 0; i < 200; i++) {
  names = new Set((await client.listTools(undefined, { cache: 'bypass' })).tools.map((t) => t.name));
  if (names.has('http__get-sum') && names.has('stdio__get-sum')) break;
  await sleep(100);
}
for (const member of ['http', 'stdio']) {
  if (!names.has(`${member}__get-sum`)) fail(`no ${member}__get-sum in ${[...names]}`);
  const summed = await client.callTool({ name: `${member}__get-sum`, arguments: { a: 2, b: 3 } });
  if (!text(summed).includes('5')) fail(text(summed));
}
console.log('listed and called both members');

let reports = 0;
await client.callTool(
  { name: 'http__trigger-long-running-operation', arguments: { duration: 1, steps: 4 } },
  { onprogress: () => { reports += 1; } },
);
if (reports < 2) fail(`progress: ${reports} reports`);
console.log(`progress: ${reports} reports`);

const abort = new AbortController();
const started = performance.now();
const call = client.callTool(
  { name: 'http__trigger-long-running-operation', arguments: { duration: 30, steps: 3 } },
  { signal: abort.signal },
);
await sleep(500);
abort.abort();
await call.then(() => fail('the cancelled call answered'), () => {});
if (performance.now() - started > 5000) fail('the cancellation took too long');
const after = await client.callTool({ name: 'http__get-sum', arguments: { a: 1, b: 1 } });
if (!text(after).includes('2')) fail(text(after));
console.log('cancelled a call');

const sampled = await client.callTool({
  name: 'http__trigger-sampling-request', arguments: { prompt: 'hi', maxTokens: 5 },
});
if (!text(sampled).includes('ts canned reply')) fail(text(sampled));
const elicited = await client.callTool({ name: 'http__trigger-elicitation-request', arguments: {} });
if (elicited.isError) fail(text(elicited));
console.log(`answered a member's sampling and elicitation (${mode})`);
await client.close();
