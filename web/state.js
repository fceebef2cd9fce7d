// state.js: what the page drew, in one object the modules share and tests
// read (window.attnd), so that every check reads data rather than pixels.
//
//   state, renders, lastRequest, lastResponse, lastError, timing
//   model        the /v1/models entry drawn (null for an inline model)
//   text, lang   the sentence drawn and the page's language for it ("ko" | "en")
//   queryTokens, keyTokens  display strings (a leading space as "␣")
//   offsets      [L][start, end) in code points of text, or null
//   layers       [layers][H][Lq][Lk] weights (one layer for a single-layer model)
//   layerIds     the layer numbers of layers
//   heads, mean  the weights [H][Lq][Lk] of the layer drawn in full, their mean
//   layer        the index into layers of that layer
//   scores       like layers, the pre-softmax scores, or null
//   scoresNote   why there are none (shown instead), or null
//   mode         "weights" | "scores"
//   selected, compare   {layer (index), head}; compare is null when off
//   enabled      Set of the heads the head view draws
//   found        Find heads' results: {model, n, ids, scores: [layers][H]{prev, induction, sink}}
//   maskedAt(l, i, j)  whether the mask hides query i's key j in layers[l]
//                as the page draws it: true, false, or null (not known: a
//                weight of exactly 0 is then drawn masked); set by draw()
//   positions    the answer's positions {type, encoding [L][dim], similarity
//                [L][L], distance [L][L]} (sinusoidal or RoPE on one layer, a
//                checkpoint's own), or null
//   positionsNote  why positions asked for are not shown (the API's refusal
//                past 1024 positions; the attention was asked again without), or null
//   projections  the drawn item's projections {q [H][Lq][D], k and v
//                [Hkv][Lk][D], o [H][Lq][D] (the heads' outputs) or null}
//                (one layer, up to 1024 positions); for a
//                checkpoint, those of the head drawn large alone, asked for
//                after its attention: {q, k, v, o [1][L][D], layer (its number),
//                head, H, Hkv}; or null
//   projectionsAsked  the checkpoint head {layer (its number), head} whose
//                projections were last asked for, or null
//   projectionsNote  why projections asked for are not shown (the API's
//                refusal; the attention was asked again without), or null
//   drawnKey     util.js specKey of the request drawn
//   findKey      the specKey Find heads ran (or runs) on, while its note is of it

export const view = {
	state: "idle",
	renders: 0,
	lastRequest: null,
	lastResponse: null,
	lastError: null,
	timing: [],
	model: null,
	text: "",
	lang: "en",
	queryTokens: [],
	keyTokens: [],
	offsets: null,
	layers: [],
	layerIds: [],
	heads: [],
	mean: [],
	layer: 0,
	scores: null,
	scoresNote: null,
	mode: "weights",
	selected: { layer: 0, head: 0 },
	compare: null,
	enabled: new Set(),
	found: null,
	maskedAt: () => null,
	positions: null,
	positionsNote: null,
	projections: null,
	projectionsNote: null,
	projectionsAsked: null,
	drawnKey: null,
	findKey: null,
};
window.attnd = view;
