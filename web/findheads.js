// findheads.js: scores every head for three well-known behaviours on a
// repeated random sequence (TransformerLens's definitions), pure functions:
//   previous-token: mean over queries i >= 1 of the weight on key i - 1
//   induction:      over the second copy, query n + i attends to key i + 1
//                   (the token after the current token's first occurrence),
//                   mean over i in [0, n)
//   first-token:    mean over queries i >= 1 of the weight on key 0 (attention
//                   sink; query 0 has key 0 alone under a causal mask)
// train/heads.py and tests/daemon/check_mini_heads.c score the same way.
// Each score is a mean of weights, so it lies in [0, 1].

export const BEHAVIOURS = [
	{ key: "prev", label: "previous token", short: "P" },
	{ key: "induction", label: "induction", short: "I" },
	{ key: "sink", label: "first token (sink)", short: "S" },
];

// A head counts as showing a behaviour from this score up.
export const MARK_AT = 0.4;

// n ids drawn from [0, vocab), none in avoid (a Set), each distinct when the
// vocabulary allows; rand() in [0, 1).
export function randomIds(n, vocab, avoid = new Set(), rand = Math.random) {
	const out = [];
	const used = new Set();
	const room = vocab - avoid.size;
	for (let tries = 0; out.length < n && tries < n * 200; tries++) {
		const id = Math.floor(rand() * vocab);
		if (avoid.has(id)) continue;
		if (used.has(id) && used.size < room) continue;
		used.add(id);
		out.push(id);
	}
	return out;
}

// How long each copy is: 50 tokens, or half the model's context when shorter.
export function copyLength(context) {
	return Math.max(2, Math.min(50, Math.floor((context ?? Infinity) / 2)));
}

// The scores of one head's weights w [2n][2n] on a sequence repeated twice.
export function scoreHead(w, n) {
	const L = w.length;
	let prev = 0;
	for (let i = 1; i < L; i++) prev += w[i][i - 1];
	let induction = 0;
	for (let i = 0; i < n; i++) induction += w[n + i][i + 1];
	let sink = 0;
	for (let i = 1; i < L; i++) sink += w[i][0];
	return { prev: L > 1 ? prev / (L - 1) : 0, induction: n > 0 ? induction / n : 0, sink: L > 1 ? sink / (L - 1) : 0 };
}

// Every head of every layer: attentions [layers][H][2n][2n] -> [layers][H]{prev, induction, sink}.
export function scoreModel(attentions, n) {
	return attentions.map((heads) => heads.map((w) => scoreHead(w, n)));
}

// The best heads for a behaviour: [{layer, head, score}], highest first.
export function ranked(scores, key, layerIds, count = 3) {
	const all = [];
	scores.forEach((heads, l) => heads.forEach((s, h) => all.push({ layer: layerIds[l], head: h, score: s[key] })));
	return all.sort((a, b) => b.score - a.score).slice(0, count);
}

// A token that looks like a special one (<|endoftext|>, <s>, [CLS], ...).
export function looksSpecial(t) {
	return /^(<\|.*\|>|<\/?s>|<unk>|<pad>|<mask>|\[[A-Z]+\])$/i.test(String(t));
}
