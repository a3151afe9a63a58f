// The ids @lenml/tokenizers gives each string of a JSON array with a
// tokenizer.json from a file (enc.js takes the one a package ships):
// node encfile.js TOKENIZER.json TEXTS.json
const { TokenizerLoader } = require("@lenml/tokenizers");
const fs = require("fs");
const tok = TokenizerLoader.fromPreTrained({
  tokenizerJSON: JSON.parse(fs.readFileSync(process.argv[2], "utf8")),
  tokenizerConfig: {},
});
const texts = JSON.parse(fs.readFileSync(process.argv[3], "utf8"));
console.log(JSON.stringify(texts.map((t) => tok.encode(t, { add_special_tokens: false }))));
