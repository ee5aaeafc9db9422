"""A page's body that plays a Lab's steps: the live views (the Playground's and a lesson's), the lesson player, a
class follower's page and the instructor's speaker view. Players are drawn by pages and draw panels."""
