"""What pages draw: panels, players and views over pykv.viz figures. Views import session state, never pages."""
