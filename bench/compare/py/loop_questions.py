"""The user messages of the closed-loop comparison: the same for Bridle and Instructor."""

TOPICS = ["I keep procrastinating before exams", "I can't fall asleep at night",
          "My manager criticised me in front of everyone", "I feel lonely since I moved",
          "I get nervous before presentations", "I argue with my sister a lot",
          "I want to drink less coffee", "I feel overwhelmed by housework"]


def questions(n):
    return [f"{TOPICS[i % len(TOPICS)]} (turn {i}). Any tips?" for i in range(n)]
