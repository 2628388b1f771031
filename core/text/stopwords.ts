/**
 * The one stopword list of the service. {@link STOPWORDS}: English function words, dropped before
 * BM25 and before averaging word vectors (search), and when summarising; they carry no topic and
 * would dominate every score. {@link QUESTION_WORDS}: words that frame a question rather than name
 * its subject ("tell me the latest news on ...", "what happened"), also ignored when matching a
 * question against sentences (answers) and when picking a query's topic (analytics).
 */
export const STOPWORDS: ReadonlySet<string> = new Set(
  (
    "a about above after again against all also am an and any are aren't as at be because been before being below " +
    "between both but by can can't cannot could couldn't did didn't do does doesn't doing don't down during each " +
    "few for from further had hadn't has hasn't have haven't having he he'd he'll he's her here here's hers herself " +
    "him himself his how how's i i'd i'll i'm i've if in into is isn't it it's its itself just let's me more most " +
    "mustn't my myself no nor not now of off on once only or other ought our ours ourselves out over own said same " +
    "says shan't she she'd she'll she's should shouldn't so some such than that that's the their theirs them " +
    "themselves then there there's these they they'd they'll they're they've this those through to too under until " +
    "up upon us very was wasn't we we'd we'll we're we've were weren't what what's when when's where where's which " +
    "while who who's whom why why's will with won't would wouldn't you you'd you'll you're you've your yours " +
    "yourself yourselves s t d ll m re ve via per within without across among around will just like may might must " +
    "shall one two new also get got"
  ).split(/\s+/),
);

/** Words that frame a question; with {@link STOPWORDS}, ignored when matching questions. */
export const QUESTION_WORDS: ReadonlySet<string> = new Set(
  (
    "anyone anything best done either gets give going happen happened happening happens know latest let " +
    "many mean means much news please really say since someone something tell thing things think today " +
    "versus vs whats whether whose yet"
  ).split(" "),
);

/** Whether a lowercase word says nothing about what a question is about. */
export function isQuestionStopword(word: string): boolean {
  return STOPWORDS.has(word) || QUESTION_WORDS.has(word);
}
