// report.mjs: the results of a node suite, one line each ("ok - NAME" or
// "FAIL - NAME" and its problems), then "N passed, M failed" and a nonzero
// exit status on any failure. Shared by contract.mjs and viewer.test.mjs.

let passed = 0;
let failed = 0;

// Reports one check by its list of problems (none: it passed).
export function report(name, problems) {
	if (problems.length === 0) {
		passed++;
		console.log(`ok - ${name}`);
		return;
	}
	failed++;
	console.log(`FAIL - ${name}`);
	for (const p of problems) console.log(`    ${p}`);
}

// Runs fn(problems) and reports; an exception is one more problem.
export async function check(name, fn) {
	const problems = [];
	try {
		await fn(problems);
	} catch (e) {
		problems.push(`threw: ${e && e.stack ? e.stack : e}`);
	}
	report(name, problems);
}

// The closing line, and the exit status it implies.
export function finish() {
	console.log(`${passed} passed, ${failed} failed`);
	process.exitCode = failed === 0 ? 0 : 1;
}
