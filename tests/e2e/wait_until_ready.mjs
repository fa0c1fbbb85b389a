// Polls URL/ready until it answers 200; exits 1 after TIMEOUT_MS. Used by the npm client suites'
// run.sh scripts:   node wait_until_ready.mjs URL TIMEOUT_MS
const [url, timeoutMs] = process.argv.slice(2);
const deadline = Date.now() + Number(timeoutMs);
while (Date.now() < deadline) {
  try {
    if ((await fetch(url + '/ready')).status === 200) process.exit(0);
  } catch {}
  await new Promise((resolve) => setTimeout(resolve, 50));
}
process.exit(1);
