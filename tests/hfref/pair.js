// The ids and token types @lenml/tokenizers gives each sentence pair
// (string i, string i+1, the last with the first) of a JSON array, with
// the post-processor's pair template of a tokenizer.json:
// node pair.js TOKENIZER.json TEXTS.json
const { TokenizerLoader } = require("@lenml/tokenizers");
const fs = require("fs");
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(process.argv[2], "utf8")),
  tokenizerConfig: {},
});
const texts = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
console.log(JSON.stringify(texts.map((t, i) => {
  const r = tok._encode_plus(t, { text_pair: texts[(i + 1) % texts.length], add_special_tokens: true,
                                  return_token_type_ids: true });
  return [r.input_ids, r.token_type_ids];
})));
