// `npm run demo`: see src/demo/run-demo.ts. `--exit` stops the fleet once the report is printed (the default
// when stdout is not a terminal).
import { runDemo } from '../src/demo/run-demo.js';

process.exitCode = await runDemo();
