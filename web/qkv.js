// qkv.js: when the viewer asks for q, k and v (render.js drawProjections
// draws them). A one-layer model's come with its attention (app.js
// buildRequest asks "projections": true up to PROJECTIONS_MAX_L
// positions); a checkpoint's are asked for afterwards, of the head drawn
// large alone: its request answers every layer's attention, and
// "projections": true beside it would answer every layer's q, k and v too.

import { checkpointProjectionsOf, drawnLarge, setProjections } from "./render.js";
import { view } from "./state.js";

// Q, K and V are asked for up to the positions' cap: (H + 2 Hkv) L D
// numbers, on base at 1024 positions 1.5 million, as many as its
// positions' encoding and similarity. The daemon sets no cap of its own on
// them, so the page counts before it sends; a checkpoint's, one head at a
// time, are under the same cap.
export const PROJECTIONS_MAX_L = 1024;

let inflight = null; // the AbortController of a checkpoint's q, k and v request

// The checkpoint head drawn large whose q, k and v to ask for, {layer (its
// number), head}, or null: nothing drawn, not a checkpoint, or more
// positions than PROJECTIONS_MAX_L (the panel then stays hidden, as a
// one-layer model's does).
function projectionsWanted() {
	if (view.state !== "ok" || view.model?.kind !== "checkpoint") return null;
	if (view.queryTokens.length > PROJECTIONS_MAX_L) return null;
	return drawnLarge();
}

// The drawn request's input, asked for the q, k and v of one layer's one
// head, and its output before o_proj, and nothing else: "projections": true
// answers every answered layer's, so asking them beside "layers": "all"
// would answer every layer.
export function projectionsRequest(req, at) {
	const input = req.tokens !== undefined ? { tokens: req.tokens } : { text: req.text };
	return { model: req.model, ...input, layers: [at.layer], heads: [at.head], weights: "none", output: false, projections: true, head_outputs: true };
}

// A checkpoint's q, k and v of the head drawn large, asked for when it is
// drawn or another head is chosen (once per head and answer; an earlier
// head's request still on its way is dropped). A refusal is said in the
// panel, the attention drawn all the same.
export async function askProjections(post) {
	const at = projectionsWanted();
	const asked = view.projectionsAsked;
	if (at === null || (asked?.layer === at.layer && asked?.head === at.head)) return;
	const req = view.lastRequest;
	inflight?.abort();
	const ctrl = new AbortController();
	inflight = ctrl;
	view.projectionsAsked = at;
	setProjections(null, null);
	let p = null;
	let note = null;
	try {
		p = checkpointProjectionsOf(await post(projectionsRequest(req, at), ctrl.signal));
		if (p === null) note = "the answer has no projections";
	} catch (e) {
		if (e.name === "AbortError") return;
		note = e.message;
	} finally {
		if (inflight === ctrl) inflight = null;
	}
	if (view.lastRequest !== req || view.projectionsAsked !== at) return;
	setProjections(p, note);
}
