import { isQuestionStopword } from "../core/text/mod.ts";
/**
 * Deterministic query classifier: intent, category and topic from keyword rules. The same text
 * always gives the same answer (no model, no randomness), so replays and fixtures agree.
 */

/** Intent types with their dashboard labels. Order matters: the first matching rule wins. */
export const INTENT_LABELS: Record<string, string> = {
  navigational: "Navigational",
  transactional: "Transactional",
  comparison: "Comparison",
  recommendation: "Recommendation",
  informational: "Informational",
  other: "Other",
};

const INTENT_RULES: Array<[intent: string, re: RegExp]> = [
  ["navigational", /(https?:\/\/|www\.|\b(homepage|home page|login|log in|sign in|website|site|contact page)\b)/],
  [
    "transactional",
    /\b(buy|order|purchase|book|booking|subscribe|price|prices|cost|costs|cheap|deal|deals|discount|coupon|ticket|tickets)\b/,
  ],
  ["comparison", /\b(vs|versus|compare|comparison|compared|difference|better than|or)\b/],
  ["recommendation", /\b(best|recommend|recommendation|should i|suggest|top|ideas?|where to|which)\b/],
  ["informational", /\b(what|how|why|who|when|where|explain|is|are|does|do|can|did|tell me|news|latest)\b/],
];

/** Categories and the keywords that put a query in them. The first category with a hit wins. */
export const CATEGORY_KEYWORDS: Record<string, string[]> = {
  travel: [
    "travel",
    "trip",
    "flight",
    "flights",
    "airline",
    "airlines",
    "hotel",
    "hotels",
    "vacation",
    "beach",
    "destination",
    "destinations",
    "visa",
    "spring break",
    "cruise",
  ],
  finance: [
    "stock",
    "stocks",
    "market",
    "markets",
    "inflation",
    "interest",
    "rates",
    "mortgage",
    "bank",
    "crypto",
    "bitcoin",
    "economy",
    "tax",
    "taxes",
    "budget",
    "invest",
    "investing",
  ],
  technology: [
    "ai",
    "phone",
    "iphone",
    "android",
    "laptop",
    "software",
    "app",
    "apps",
    "chip",
    "chips",
    "computer",
    "gadget",
    "robot",
    "internet",
    "tech",
  ],
  sports: [
    "football",
    "soccer",
    "basketball",
    "nba",
    "nfl",
    "tennis",
    "olympics",
    "match",
    "game",
    "league",
    "team",
    "score",
    "cup",
  ],
  politics: [
    "election",
    "elections",
    "president",
    "senate",
    "congress",
    "vote",
    "voting",
    "policy",
    "government",
    "minister",
    "parliament",
  ],
  health: [
    "health",
    "diet",
    "covid",
    "vaccine",
    "flu",
    "fitness",
    "exercise",
    "sleep",
    "doctor",
    "hospital",
    "nutrition",
  ],
  entertainment: [
    "movie",
    "movies",
    "film",
    "music",
    "album",
    "concert",
    "tv",
    "series",
    "show",
    "celebrity",
    "festival",
  ],
  food: ["recipe", "recipes", "restaurant", "restaurants", "food", "cook", "cooking", "dinner", "wine", "coffee"],
  weather: ["weather", "forecast", "rain", "storm", "snow", "temperature", "heatwave"],
  business: ["company", "companies", "startup", "ceo", "earnings", "merger", "layoffs", "jobs", "retail"],
};

/** The classifier's answer for one query text. */
export interface Classification {
  intent_type: string;
  category: string;
  topic: string;
}

const words = (s: string): string[] => s.toLowerCase().match(/[a-z0-9]+(?:'[a-z]+)?/g) ?? [];

/**
 * Classifies a query text.
 * @example classify("Where should I travel this spring?") // {intent_type:"recommendation", category:"travel", topic:"travel"}
 */
export function classify(query: string): Classification {
  const lower = query.toLowerCase();
  const padded = ` ${words(lower).join(" ")} `;
  let intent = "other";
  for (const [name, re] of INTENT_RULES) {
    if (re.test(lower)) {
      intent = name;
      break;
    }
  }
  let category = "general";
  let topic = "";
  for (const [name, keywords] of Object.entries(CATEGORY_KEYWORDS)) {
    const hit = keywords.find((k) => padded.includes(` ${k} `));
    if (hit) {
      category = name;
      topic = hit;
      break;
    }
  }
  if (!topic) {
    // The longest content word stands for the topic; ties go to the earliest.
    for (const w of words(lower)) if (!isQuestionStopword(w) && w.length > topic.length) topic = w;
  }
  return { intent_type: intent, category, topic: topic || "general" };
}
