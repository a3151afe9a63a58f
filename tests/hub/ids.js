// The ids @lenml/tokenizers (an independent JavaScript implementation of
// the tokenizers library) gives each string of a JSON array with a
// tokenizer.json, special tokens added by its post-processor or not:
// node ids.js TOKENIZER.json TEXTS.json special|plain
const { TokenizerLoader } = require("@lenml/tokenizers");
const fs = require("fs");
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(process.argv[2], "utf8")),
  tokenizerConfig: {},
});
const texts = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
const special = process.argv[4] === "special";
console.log(JSON.stringify(texts.map((t) => tok.encode(t, { add_special_tokens: special }))));
